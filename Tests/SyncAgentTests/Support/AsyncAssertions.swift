import XCTest

/// `XCTAssertEqual` for expressions that await (XCTest's autoclosures cannot).
func assertEqual<T: Equatable>(
    _ expression: @autoclosure () async throws -> T, _ expected: @autoclosure () -> T, _ message: @autoclosure () -> String = "",
    file: StaticString = #filePath, line: UInt = #line
) async throws {
    let value = try await expression()
    XCTAssertEqual(value, expected(), message(), file: file, line: line)
}

/// `XCTAssertNotEqual` for expressions that await.
func assertNotEqual<T: Equatable>(
    _ expression: @autoclosure () async throws -> T, _ other: @autoclosure () -> T, _ message: @autoclosure () -> String = "",
    file: StaticString = #filePath, line: UInt = #line
) async throws {
    let value = try await expression()
    XCTAssertNotEqual(value, other(), message(), file: file, line: line)
}

/// `XCTAssertNil` for expressions that await.
func assertNil<T>(
    _ expression: @autoclosure () async throws -> T?, _ message: @autoclosure () -> String = "",
    file: StaticString = #filePath, line: UInt = #line
) async throws {
    let value = try await expression()
    XCTAssertNil(value, message(), file: file, line: line)
}

/// `XCTAssertTrue` for expressions that await.
func assertTrue(
    _ expression: @autoclosure () async throws -> Bool, _ message: @autoclosure () -> String = "",
    file: StaticString = #filePath, line: UInt = #line
) async throws {
    let value = try await expression()
    XCTAssertTrue(value, message(), file: file, line: line)
}

/// Waits until `condition` holds, checking every 50 ms; fails the test and throws after `timeout`.
/// The one way the tests wait for something to happen.
func waitUntil(
    _ what: @autoclosure () -> String, timeout: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            XCTFail("\(what()): not within \(timeout)", file: file, line: line)
            throw CancellationError()
        }
        try await Task.sleep(for: .milliseconds(50))
    }
}

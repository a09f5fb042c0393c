import JSON
import XCTest
@testable import Store

/// A database in a temporary directory, closed and removed at tear-down.
class DatabaseTestCase: XCTestCase {
    var directory: TemporaryDirectory!
    var database: Database!

    override func setUp() async throws {
        directory = TemporaryDirectory()
        database = try Database.open(path: directory.file("test.sqlite"), name: "test")
    }

    override func tearDown() async throws {
        database.close()
        directory.remove()
    }

    /// Asserts that `work` throws a StoreError with CouchDB's `error` name.
    func assertRefused<T>(_ error: String, _ work: () async throws -> T, file: StaticString = #filePath, line: UInt = #line) async {
        do {
            _ = try await work()
            XCTFail("expected \(error)", file: file, line: line)
        } catch let refused as StoreError {
            XCTAssertEqual(refused.error, error, refused.reason, file: file, line: line)
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
    }
}

extension WriteResult {
    /// The revision, or a test failure.
    var revision: RevisionID { try! result.get() }
}

/// Parses JSON text in tests.
func json(_ text: String) -> JSON { try! JSON(parsing: text) }

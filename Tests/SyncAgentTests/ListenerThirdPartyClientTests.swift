import Foundation
import XCTest

/// Drives `syncd serve` through couchdb3, an independent CouchDB client
/// library from PyPI (installed by the test command; see Tests/python).
final class ListenerThirdPartyClientTests: XCTestCase {
    func testCouchDB3ClientWithCookieLogin() throws {
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("python/run-couchdb3-test.sh").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["bash", script, ServeProcess.executable]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "couchdb3 client test failed:\n\(text)")
    }
}

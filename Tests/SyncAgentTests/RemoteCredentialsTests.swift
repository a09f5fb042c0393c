import Foundation
@testable import SyncAgent
import XCTest

/// A configured remote's `credentials_file`: read only when private to its owner and
/// its group, and never quoted in an error.
final class RemoteCredentialsTests: XCTestCase {
    private let secret = "s3cret-Passw0rd"

    private func file(_ text: String, mode: mode_t, in directory: TemporaryDirectory) throws -> String {
        let path = directory.path + "/couch.credentials"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(path, mode), 0)
        return path
    }

    private func refusal(_ path: String) -> ConfigurationError? {
        do {
            _ = try RemoteLink.url("https://couch.example:6984/notes", credentialsFrom: path)
            return nil
        } catch {
            return error as? ConfigurationError
        }
    }

    func testAPrivateFileGivesTheURLItsCredentials() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let url = try RemoteLink.url("https://couch.example:6984/notes",
                                     credentialsFrom: try file("admin:\(secret)\n", mode: 0o640, in: directory))
        XCTAssertEqual(url.credentials?.user, "admin")
        XCTAssertEqual(url.credentials?.password, secret)
        XCTAssertFalse(url.description.contains(secret), url.description)
    }

    func testAFileOthersMayReadIsRefusedAndNothingOfItIsShown() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for mode: mode_t in [0o604, 0o644, 0o666, 0o601] {
            let path = try file("admin:\(secret)\n", mode: mode, in: directory)
            let error = try XCTUnwrap(refusal(path), "mode \(String(mode, radix: 8)) was accepted")
            XCTAssertEqual(error.message, "the credentials file \(path) may be read by every user: chmod o-rwx it")
        }
    }

    func testAMissingOrMalformedFileIsRefusedWithoutItsContent() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let missing = try XCTUnwrap(refusal(directory.path + "/none"))
        XCTAssertTrue(missing.message.hasPrefix("cannot read the credentials file \(directory.path)/none"), missing.message)
        let path = try file("\(secret)\n", mode: 0o600, in: directory)
        let malformed = try XCTUnwrap(refusal(path))
        XCTAssertEqual(malformed.message, "the credentials file \(path) must hold user:password")
        XCTAssertFalse(malformed.description.contains(secret))
    }
}

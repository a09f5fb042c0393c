import Foundation
@testable import SyncAgent
import XCTest

/// `AuthSession` cookies expire after the session timeout, end with a new password, and
/// cannot be forged or stretched; the clock is passed in, so nothing waits.
final class SessionCookieTests: XCTestCase {
    private let cookies = SessionCookies(timeout: 600)
    private let issued = Date(timeIntervalSince1970: 1_800_000_000)

    private func verify(_ value: String, salt: String = "salt-1", at seconds: TimeInterval) -> String? {
        cookies.verify(value, salt: { $0 == "carol" ? salt : nil }, now: issued.addingTimeInterval(seconds))?.name
    }

    func testACookieLastsTheTimeoutAndNoLonger() {
        let cookie = cookies.make(name: "carol", salt: "salt-1", now: issued)
        XCTAssertEqual(verify(cookie, at: 0), "carol")
        XCTAssertEqual(verify(cookie, at: 599), "carol")
        XCTAssertNil(verify(cookie, at: 600), "expired at the timeout")
        XCTAssertNil(verify(cookie, at: 86_400))
        XCTAssertEqual(verify(cookie, at: -59), "carol", "a clock a little behind the issuer's")
        XCTAssertNil(verify(cookie, at: -61), "issued in the future")
    }

    func testANewPasswordAForgedTimeOrAnotherNameEndsIt() throws {
        let cookie = cookies.make(name: "carol", salt: "salt-1", now: issued)
        XCTAssertNil(verify(cookie, salt: "salt-2", at: 1), "the password changed since")
        // The same name and MAC with a later time: the MAC covers the time.
        var bytes = try XCTUnwrap(SessionCookies.unbase64url(cookie))
        let stamp = Array(String(Int(issued.timeIntervalSince1970), radix: 16, uppercase: true).utf8)
        let later = Array(String(Int(issued.timeIntervalSince1970) + 3600, radix: 16, uppercase: true).utf8)
        let start = try XCTUnwrap(bytes.firstIndex(of: UInt8(ascii: ":"))) + 1
        XCTAssertEqual(Array(bytes[start..<(start + stamp.count)]), stamp)
        bytes.replaceSubrange(start..<(start + stamp.count), with: later)
        XCTAssertNil(verify(SessionCookies.base64url(bytes), at: 3000), "a stretched cookie")
        XCTAssertNil(verify(cookies.make(name: "mallory", salt: "salt-1", now: issued), at: 1), "an unknown user")
        XCTAssertNil(verify("bm90LWEtY29va2ll", at: 1))
        let otherProcess = SessionCookies(timeout: 600)
        XCTAssertNil(otherProcess.verify(cookie, salt: { _ in "salt-1" }, now: issued.addingTimeInterval(1)), "another process's secret")
    }
}

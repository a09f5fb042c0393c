import AsyncHTTPClient
import JSON
import Locking
import Foundation
import Store
@testable import SyncAgent
import XCTest

/// HTTP Basic authentication, `_session` cookies and refusing anonymous access.
final class ListenerAuthTests: XCTestCase {
    func testBasicAuthentication() async throws {
        let started = try await startListener(users: ["alice": "s3cret pass"])
        try started.listener.node.users.setPassword("s3cret pass", for: "alice", roles: [UserStore.adminRole])
        let anonymous = try await HTTP.request(.GET, started.anonymousURL + "/_all_dbs")
        XCTAssertEqual(anonymous.status, 401)
        XCTAssertEqual(anonymous.json["error"], "unauthorized")
        XCTAssertNotNil(anonymous.header("WWW-Authenticate"))
        try await assertEqual(try await HTTP.json(.PUT, started.anonymousURL + "/db").status, 401)
        let server = (url: started.anonymousURL, listener: started.listener)

        let wrong = try await HTTP.json(.GET, server.url + "/", headers: [HTTP.basic("alice", "wrong")])
        XCTAssertEqual(wrong.status, 401)
        XCTAssertEqual(wrong.json["reason"], "Name or password is incorrect.")
        XCTAssertFalse(wrong.json.serialized().contains("wrong"), "the password must not be echoed")
        try await assertEqual(try await HTTP.json(.GET, server.url + "/", headers: [HTTP.basic("mallory", "s3cret pass")]).status, 401)

        let right = try await HTTP.json(.PUT, server.url + "/db", headers: [HTTP.basic("alice", "s3cret pass")])
        XCTAssertEqual(right.status, 201)
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db", headers: [HTTP.basic("alice", "s3cret pass")]).status, 200)
        try await assertEqual(try await HTTP.json(.GET, server.url + "/_up").status, 200)

        let session = try await HTTP.json(.GET, server.url + "/_session", headers: [HTTP.basic("alice", "s3cret pass")])
        XCTAssertEqual(session.json["userCtx"]?["name"], "alice")
        XCTAssertEqual(session.json["userCtx"]?["roles"], ["_admin"])
        XCTAssertEqual(session.json["info"]?["authenticated"], "default")
    }

    /// The MAC is raw bytes and may contain ':', the field separator.
    func testEverySessionCookieVerifies() {
        let cookies = SessionCookies(timeout: 600)
        for index in 0..<500 {
            let value = cookies.make(name: "user\(index)", salt: "salt")
            XCTAssertEqual(cookies.verify(value, salt: { _ in "salt" })?.name, "user\(index)")
        }
        XCTAssertNil(cookies.verify(cookies.make(name: "eve", salt: "old"), salt: { _ in "new" }))
    }

    func testSessionCookie() async throws {
        let started = try await startListener(users: ["bob": "hunter2"])
        try started.listener.node.users.setPassword("hunter2", for: "bob", roles: [UserStore.adminRole])
        let server = (url: started.anonymousURL, listener: started.listener)
        let refused = try await HTTP.request(.POST, server.url + "/_session", json: ["name": "bob", "password": "nope"])
        XCTAssertEqual(refused.status, 401)
        XCTAssertNil(refused.header("Set-Cookie"))

        let login = try await HTTP.request(.POST, server.url + "/_session", json: ["name": "bob", "password": "hunter2"])
        XCTAssertEqual(login.status, 200)
        XCTAssertEqual(login.json["ok"], true)
        XCTAssertEqual(login.json["name"], "bob")
        XCTAssertEqual(login.json["roles"], ["_admin"])
        let setCookie = try XCTUnwrap(login.header("Set-Cookie"))
        XCTAssertTrue(setCookie.hasPrefix("AuthSession="))
        XCTAssertTrue(setCookie.hasSuffix("; HttpOnly; SameSite=Lax"), "over plain HTTP the cookie cannot be Secure: \(setCookie)")
        let cookie = String(setCookie.split(separator: ";")[0])

        let me = try await HTTP.json(.GET, server.url + "/_session", headers: [("Cookie", cookie)])
        XCTAssertEqual(me.json["userCtx"]?["name"], "bob")
        XCTAssertEqual(me.json["info"]?["authenticated"], "cookie")
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db", headers: [("Cookie", cookie)]).status, 201)

        let forged = cookie.dropLast(3) + "AAA"
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db", headers: [("Cookie", String(forged))]).status, 401)

        let form = try await HTTP.request(.POST, server.url + "/_session", body: Array("name=bob&password=hunter2".utf8),
                                          headers: [("Content-Type", "application/x-www-form-urlencoded")])
        XCTAssertEqual(form.status, 200)

        let logout = try await HTTP.request(.DELETE, server.url + "/_session", headers: [("Cookie", cookie)])
        XCTAssertEqual(logout.status, 200)
        XCTAssertTrue(logout.header("Set-Cookie")?.hasPrefix("AuthSession=;") ?? false)

        // A new password ends sessions made with the old one.
        try server.listener.node.users.setPassword("changed", for: "bob")  // in effect when it returns
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db", headers: [("Cookie", cookie)]).status, 401)
    }

    func testAnonymousGetsOnlyWhatIsOpenAndWrongCredentialsNever() async throws {
        let server = try await startListener(users: ["carol": "pw"])
        try await assertEqual(try await HTTP.json(.GET, server.anonymousURL + "/").status, 200)
        try await assertEqual(try await HTTP.json(.GET, server.anonymousURL + "/_up").status, 200)
        try await assertEqual(try await HTTP.json(.GET, server.anonymousURL + "/", headers: [HTTP.basic("carol", "bad")]).status, 401)
        let session = try await HTTP.json(.GET, server.anonymousURL + "/_session")
        XCTAssertEqual(session.json["userCtx"]?["name"], .null)
        XCTAssertEqual(session.json["userCtx"]?["roles"], [])
        let carol = try await HTTP.json(.GET, server.anonymousURL + "/_session", headers: [HTTP.basic("carol", "pw")])
        XCTAssertEqual(carol.json["userCtx"]?["name"], "carol")
        XCTAssertEqual(carol.json["userCtx"]?["roles"], [], "a user is admin only if made so")
    }

    /// An unknown user and a wrong password go through the same check: each hashes
    /// the password once (the unknown user's against a decoy), so the answer's time
    /// does not tell whether the user exists. A verified password is not hashed again.
    /// (What one check costs is a benchmark's business, not this test's.)
    func testUnknownUserAndWrongPasswordTakeTheSamePath() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let users = UserStore(directory: directory.path, iterations: 1000)
        try users.setPassword("right", for: "known")
        for (name, password) in [("known", "wrong"), ("nobody", "wrong"), ("nobody", "right")] {
            let before = users.passwordsHashed
            let result = try await users.verify(name: name, password: password)
            XCTAssertNil(result, name)
            XCTAssertEqual(users.passwordsHashed - before, 1, "\(name) with a wrong password hashes it once")
        }
        let first = users.passwordsHashed
        let right = try await users.verify(name: "known", password: "right")
        XCTAssertNotNil(right)
        XCTAssertEqual(users.passwordsHashed - first, 1)
        let again = try await users.verify(name: "known", password: "right")
        XCTAssertNotNil(again)
        XCTAssertEqual(users.passwordsHashed - first, 1, "a verified password is answered from the cache")
    }

    /// One address gets at most its share of the hashing queue: its other checks are refused
    /// at once as busy, and each refusal counts toward its lockout, so a guesser that floods the
    /// queue is locked out before its admitted guesses are even hashed. Another address is
    /// taken meanwhile.
    func testAnAddressGetsItsShareOfPasswordChecksAndItsBusyRefusalsLockItOut() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A slow hash (the store checks a password with the iterations it was hashed with).
        try UserStore(directory: directory.path, iterations: 200_000).setPassword("right", for: "slow")
        let server = try await startListener(directory: directory.path)
        let (guesser, other) = ("192.0.2.1", "192.0.2.2")
        let outcomes = Locked<[Int]>([])
        let guesses = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        do {
                            _ = try await server.listener.checkPassword(name: "slow", password: "guess", from: guesser)
                            outcomes.withLock { $0.append(200) }
                        } catch {
                            outcomes.withLock { $0.append(Int((error as? CouchError)?.status.code ?? 0)) }
                        }
                    }
                }
            }
        }
        try await waitUntil("the guesses past the address's share are refused", timeout: .seconds(60)) {
            outcomes.withLock { $0.filter { $0 == 503 }.count } >= 10
        }
        let early = outcomes.withLock { $0 }
        if !early.contains(401) {
            XCTAssertNotNil(server.listener.passwordAttempts.wait(for: guesser), "locked out by its busy refusals alone: \(early)")
        }
        let checked = try await server.listener.checkPassword(name: "slow", password: "right", from: other)
        XCTAssertEqual(checked.roles, [])
        await guesses.value
        let hashed = outcomes.withLock { $0.filter { $0 == 401 }.count }
        XCTAssertGreaterThanOrEqual(hashed, UserStore.maximumWaitingPerAddress)
        // Its share, and at most as many again that came once a slot was free.
        XCTAssertLessThanOrEqual(hashed, 2 * UserStore.maximumWaitingPerAddress, "\(outcomes.withLock { $0 })")
        XCTAssertEqual(outcomes.withLock { $0.count }, 16)
    }

    /// A flood of password checks waits on one hashing thread with a bounded
    /// queue: the overflow is refused at once (503 on the listener), and a
    /// password already verified is answered without waiting in that queue.
    func testAFloodOfPasswordChecksIsBoundedAndDoesNotHoldUpVerifiedUsers() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let users = UserStore(directory: directory.path, iterations: 20_000)
        try users.setPassword("right", for: "known")
        let verified = try await users.verify(name: "known", password: "right")
        XCTAssertNotNil(verified)
        let finished = Locked(0)
        let flood = Task {
            await withTaskGroup(of: Bool.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        defer { finished.withLock { $0 += 1 } }
                        do {
                            // From twenty addresses: no one address is past its share of the queue.
                            _ = try await users.verify(name: "user\(index)", password: "guess", from: "10.0.0.\(index % 20)")
                            return false
                        } catch UserStoreError.busy {
                            return true
                        } catch {
                            XCTFail("\(error)")
                            return false
                        }
                    }
                }
                var busy = 0
                for await refused in group where refused { busy += 1 }
                return busy
            }
        }
        // The checks past the queue's bound are refused at once; the rest wait to be hashed.
        try await waitUntil("the checks past the queue's bound are refused", timeout: .seconds(30)) {
            finished.withLock { $0 } >= 40 - UserStore.maximumWaiting
        }
        let again = try await users.verify(name: "known", password: "right")
        let doneWhenAnswered = finished.withLock { $0 }
        let busy = await flood.value
        XCTAssertNotNil(again)
        XCTAssertGreaterThanOrEqual(busy, 40 - UserStore.maximumWaiting, "checks beyond the queue's bound are refused")
        XCTAssertLessThan(doneWhenAnswered, 40, "the verified user was answered while the flood was still being hashed")
    }

    /// Repeated failures from one address are refused before they are checked.
    func testRepeatedFailuresAreSlowedDown() async throws {
        let server = try await startListener(users: ["dan": "pw"])
        // Ten failures pass, then one a second: however slow each request is (ThreadSanitizer),
        // failing faster than that meets a 429 within a few more attempts.
        var statuses: [Int] = []
        while statuses.last != 429 && statuses.count < 40 {
            statuses.append(try await HTTP.json(.GET, server.anonymousURL + "/_session", headers: [HTTP.basic("dan", "guess")]).status)
        }
        XCTAssertEqual(Array(statuses.prefix(10)), Array(repeating: 401, count: 10))
        XCTAssertEqual(statuses.last, 429, "\(statuses)")
        let limited = try await HTTP.request(.GET, server.anonymousURL + "/_session", headers: [HTTP.basic("dan", "pw")])
        XCTAssertEqual(limited.status, 429, "even the right password waits once the address is limited")
        XCTAssertNotNil(limited.header("Retry-After"))
        XCTAssertEqual(limited.json["error"], "too_many_requests")
    }

    func testPasswordsAreStoredSaltedAndPrivate() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let users = UserStore(directory: directory.path, iterations: 20_000)
        try users.setPassword("correct horse", for: "dave")
        try users.setPassword("correct horse", for: "erin")
        let text = try String(contentsOfFile: users.path, encoding: .utf8)
        XCTAssertFalse(text.contains("correct horse"))
        let json = try JSON(parsing: text)
        XCTAssertNotEqual(json["users"]?["dave"]?["password"]?["derived_key"], json["users"]?["erin"]?["password"]?["derived_key"])
        let mode = try FileManager.default.attributesOfItem(atPath: users.path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        let dave = try await users.verify(name: "dave", password: "correct horse")
        XCTAssertNotNil(dave)
        let spaced = try await users.verify(name: "dave", password: "correct horse ")
        XCTAssertNil(spaced)
        XCTAssertEqual(try users.names(), ["dave", "erin"])
        XCTAssertTrue(try users.remove("dave"))
        let removed = try await users.verify(name: "dave", password: "correct horse")
        XCTAssertNil(removed)
        XCTAssertThrowsError(try users.setPassword("x", for: "a:b")) { error in
            guard case .invalidName("a:b")? = error as? UserStoreError else { return XCTFail("\(error)") }
        }
    }
}

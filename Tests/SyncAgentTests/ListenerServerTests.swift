import AsyncHTTPClient
import Foundation
import Store
@testable import SyncAgent
import XCTest

/// Server and database endpoints: welcome, `_up`, `_all_dbs`, `PUT/GET/HEAD/DELETE /{db}`.
final class ListenerServerTests: XCTestCase {
    func testWelcomeNamesTheNodeAndACouchDBVersion() async throws {
        let server = try await startListener()
        let (status, welcome) = try await HTTP.json(.GET, server.url + "/")
        XCTAssertEqual(status, 200)
        XCTAssertEqual(welcome["couchdb"], "Welcome")
        XCTAssertEqual(welcome["version"], "3.5.0")
        XCTAssertEqual(welcome["vendor"]?["name"], "syncd")
        XCTAssertEqual(welcome["uuid"]?.stringValue, server.listener.node.identity.uuid)
        XCTAssertEqual(welcome["uuid"]?.stringValue?.count, 32)
        let up = try await HTTP.json(.GET, server.url + "/_up")
        XCTAssertEqual(up.status, 200)
        XCTAssertEqual(up.json["status"], "ok")
    }

    /// Every answer carries `Date` (RFC 9110's IMF-fixdate, the second it was sent) and `Server`.
    func testAnswersCarryTheDateAndTheServer() async throws {
        XCTAssertEqual(HTTPDate.text(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT")
        XCTAssertEqual(HTTPDate.text(1_795_000_000), "Wed, 18 Nov 2026 11:06:40 GMT")
        let server = try await startListener()
        for path in ["/", "/nosuchdb"] {
            let before = time(nil)
            let answer = try await HTTP.request(.GET, server.url + path)
            let after = time(nil)
            let sent = try XCTUnwrap(answer.header("Date"))
            XCTAssertTrue((before...after).map(HTTPDate.text).contains(sent), "\(sent) is not a time between \(before) and \(after)")
            XCTAssertEqual(answer.header("Server"), "syncd")
        }
    }

    /// The listener gives back the memory of a database unasked for its idle time, and not before.
    func testADatabaseIsReleasedOnceIdleForItsIdleTime() async throws {
        let idle = Duration.seconds(2)
        let server = try await startListener { $0.databaseIdleTime = idle }
        let catalog = server.listener.node.catalog
        let created = try await HTTP.request(.PUT, server.url + "/notes")
        XCTAssertEqual(created.status, 201)
        // Asked for again between two of the listener's rounds (at its start, then an idle time
        // later), so the next round comes before the database has been idle that long.
        try await Task.sleep(for: .seconds(1))
        let read = try await HTTP.request(.GET, server.url + "/notes")
        XCTAssertEqual(read.status, 200)
        let asked = try XCTUnwrap(catalog.nextIdle(after: .zero), "released while asked for")
        try await waitUntil("the database is released", timeout: .seconds(30)) { catalog.nextIdle(after: .zero) == nil }
        XCTAssertGreaterThanOrEqual(ContinuousClock.now, asked + idle, "released before its idle time")
    }

    func testNodeUUIDSurvivesARestart() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let first = try await TestListener.start(directory: directory.path)
        let uuid = try await HTTP.json(.GET, first.url + "/").json["uuid"]
        await first.stop()
        let second = try await startListener(directory: directory.path)
        let again = try await HTTP.json(.GET, second.url + "/").json["uuid"]
        XCTAssertEqual(uuid, again)
        XCTAssertNotNil(uuid?.stringValue)
    }

    func testDatabaseLifecycle() async throws {
        let server = try await startListener()
        let created = try await HTTP.request(.PUT, server.url + "/notes")
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(created.json["ok"], true)
        XCTAssertEqual(created.header("Location"), "/notes")

        let again = try await HTTP.json(.PUT, server.url + "/notes")
        XCTAssertEqual(again.status, 412)
        XCTAssertEqual(again.json["error"], "file_exists")

        let info = try await HTTP.json(.GET, server.url + "/notes")
        XCTAssertEqual(info.status, 200)
        XCTAssertEqual(info.json["db_name"], "notes")
        XCTAssertEqual(info.json["doc_count"], 0)
        XCTAssertEqual(info.json["update_seq"], 0)
        XCTAssertEqual(info.json["uuid"]?.stringValue, try server.catalog.database("notes").uuid)
        XCTAssertNotNil(info.json["sizes"]?["file"]?.intValue)
        XCTAssertNotNil(info.json["instance_start_time"]?.stringValue)

        let head = try await HTTP.request(.HEAD, server.url + "/notes")
        XCTAssertEqual(head.status, 200)
        XCTAssertTrue(head.body.isEmpty)

        let all = try await HTTP.json(.GET, server.url + "/_all_dbs")
        XCTAssertEqual(all.json, ["notes"])

        let deleted = try await HTTP.json(.DELETE, server.url + "/notes")
        XCTAssertEqual(deleted.status, 200)
        let gone = try await HTTP.json(.GET, server.url + "/notes")
        XCTAssertEqual(gone.status, 404)
        XCTAssertEqual(gone.json["error"], "not_found")
        let headGone = try await HTTP.request(.HEAD, server.url + "/notes")
        XCTAssertEqual(headGone.status, 404)
        try await assertEqual(try await HTTP.json(.DELETE, server.url + "/notes").status, 404)
    }

    func testInvalidDatabaseNamesAndMethods() async throws {
        let server = try await startListener()
        let invalid = try await HTTP.json(.PUT, server.url + "/Bad%20Name")
        XCTAssertEqual(invalid.status, 400)
        XCTAssertEqual(invalid.json["error"], "illegal_database_name")
        let wrongMethod = try await HTTP.json(.POST, server.url + "/_all_dbs")
        XCTAssertEqual(wrongMethod.status, 405)
        XCTAssertEqual(wrongMethod.json["error"], "method_not_allowed")
        let unknown = try await HTTP.json(.GET, server.url + "/_nothing_here")
        XCTAssertEqual(unknown.status, 404)
        try await assertEqual(try await HTTP.json(.GET, server.url + "/missing/doc").status, 404)
    }

    func testDatabaseNamesWithSlashes() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/team%2Fnotes").status, 201)
        let info = try await HTTP.json(.GET, server.url + "/team%2Fnotes")
        XCTAssertEqual(info.json["db_name"], "team/notes")
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/team%2Fnotes/a", ["x": 1]).status, 201)
        try await assertEqual(try await HTTP.json(.GET, server.url + "/team%2Fnotes/a").json["x"], 1)
    }
}

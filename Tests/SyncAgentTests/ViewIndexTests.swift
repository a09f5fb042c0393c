import Foundation
import JSON
import Store
import SyncAgent
import XCTest

/// A view's index over its life, as CouchDB keeps one: built from the database's changes when
/// queried, rebuilt when its functions change, dropped with its design document, the same on a
/// node a design document replicated to, and never lost to a function that runs away or an
/// engine that dies mid-build.
final class ViewIndexTests: XCTestCase {
    private static let byType: JSON = ["views": ["by_type": ["map": "function (doc) { if (doc.type) emit(doc.type, doc.n); }", "reduce": "_sum"]]]

    /// A database on `server` holding `count` documents `{type, n}`, types cycling through three.
    private func database(_ server: TestListener, _ name: String = "db", count: Int = 30, design: JSON = byType) async throws -> String {
        let db = server.url + "/" + name
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        let types = ["task", "note", "idea"]
        for start in stride(from: 0, to: count, by: 1000) {
            let docs = (start..<min(count, start + 1000)).map { index -> JSON in
                ["_id": .string(String(format: "d%05d", index)), "type": .string(types[index % 3]), "n": .number(Double(index))]
            }
            try await assertEqual(try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": .array(docs)]).status, 201)
        }
        try await assertEqual(try await HTTP.json(.PUT, db + "/_design/app", design).status, 201)
        return db
    }

    func testTheIndexFollowsWritesAndDeletionsAndMapsOnlyTheWinner() async throws {
        let server = try await startListener()
        let db = try await database(server, count: 6)
        let tasks = try await HTTP.json(.GET, db + "/_design/app/_view/by_type?key=%22task%22&reduce=false")
        XCTAssertEqual(tasks.json, ["total_rows": 6, "offset": 4, "rows": [
            ["id": "d00000", "key": "task", "value": 0], ["id": "d00003", "key": "task", "value": 3],
        ]])
        // An edit moves the document's row; a deletion removes it.
        let edited = try await HTTP.json(.GET, db + "/d00000")
        try await assertEqual(try await HTTP.json(.PUT, db + "/d00000", ["_rev": edited.json["_rev"]!, "type": "note", "n": 100]).status, 201)
        let third = try await HTTP.json(.GET, db + "/d00003")
        try await assertEqual(try await HTTP.json(.DELETE, db + "/d00003?rev=" + third.json["_rev"]!.stringValue!).status, 200)
        // A conflicting revision that loses changes nothing that is mapped.
        try await assertEqual(try await HTTP.json(.PUT, db + "/d00001?new_edits=false", ["_rev": "1-0000", "type": "task", "n": -1]).status, 201)
        let after = try await HTTP.json(.GET, db + "/_design/app/_view/by_type?reduce=false")
        XCTAssertEqual(after.json["total_rows"], 5)
        XCTAssertEqual(after.json["rows"], [
            ["id": "d00002", "key": "idea", "value": 2], ["id": "d00005", "key": "idea", "value": 5],
            ["id": "d00000", "key": "note", "value": 100], ["id": "d00001", "key": "note", "value": 1], ["id": "d00004", "key": "note", "value": 4],
        ])
        let sums = try await HTTP.json(.GET, db + "/_design/app/_view/by_type?group=true")
        XCTAssertEqual(sums.json, ["rows": [["key": "idea", "value": 7], ["key": "note", "value": 105]]])
    }

    func testAnEditedMapRebuildsTheIndexAndADeletedDesignDocumentsViewIsGone() async throws {
        let server = try await startListener()
        let db = try await database(server, count: 30)
        try await assertEqual(try await HTTP.json(.GET, db + "/_design/app/_view/by_type?reduce=false&limit=0").json["total_rows"], 30)

        let design = try await HTTP.json(.GET, db + "/_design/app")
        let doubled: JSON = ["_rev": design.json["_rev"]!, "views": ["by_type": ["map": "function (doc) { if (doc.type === 'task') { emit([doc.type, 1], null); emit([doc.type, 2], null); } }"]]]
        let edit = try await HTTP.json(.PUT, db + "/_design/app", doubled)
        XCTAssertEqual(edit.status, 201)
        let rebuilt = try await HTTP.json(.GET, db + "/_design/app/_view/by_type?startkey=%5B%22task%22%2C2%5D&limit=2")
        XCTAssertEqual(rebuilt.json, ["total_rows": 20, "offset": 10, "rows": [
            ["id": "d00000", "key": ["task", 2], "value": nil], ["id": "d00003", "key": ["task", 2], "value": nil],
        ]])

        try await assertEqual(try await HTTP.json(.DELETE, db + "/_design/app?rev=" + edit.json["rev"]!.stringValue!).status, 200)
        let gone = try await HTTP.json(.GET, db + "/_design/app/_view/by_type")
        XCTAssertEqual(gone.status, 404)
        XCTAssertEqual(gone.json, ["error": "not_found", "reason": "missing"])
        let cleanup = try await HTTP.json(.POST, db + "/_view_cleanup", [:])
        XCTAssertEqual(cleanup.status, 202)
        XCTAssertEqual(cleanup.json, ["ok": true])
    }

    func testAJavaScriptReduceRereducesOverManyRows() async throws {
        let server = try await startListener()
        let design: JSON = ["views": ["n": [
            "map": "function (doc) { emit(doc.type, doc.n); }",
            "reduce": "function (keys, values, rereduce) { var total = 0; for (var i = 0; i < values.length; i++) total += values[i]; return total; }",
        ]]]
        let db = try await database(server, count: 2_500, design: design)
        let whole = try await HTTP.json(.GET, db + "/_design/app/_view/n")
        XCTAssertEqual(whole.json, ["rows": [["key": nil, "value": .number(Double(2_499 * 2_500 / 2))]]], "2,500 rows take three calls and a rereduce")
        let grouped = try await HTTP.json(.GET, db + "/_design/app/_view/n?group=true")
        let sums = (0..<3).map { type in stride(from: type, to: 2_500, by: 3).reduce(0, +) }
        XCTAssertEqual(grouped.json, ["rows": [
            ["key": "idea", "value": .number(Double(sums[2]))], ["key": "note", "value": .number(Double(sums[1]))],
            ["key": "task", "value": .number(Double(sums[0]))],
        ]])
    }

    func testARunawayMapFailsWithCouchDBsErrorWhileOtherDatabasesAreAnswered() async throws {
        let server = try await startListener()
        let db = try await database(server, "spin", count: 3, design: ["views": ["v": ["map": "function (doc) { while (true) {} }"]]])
        let calm = try await database(server, "calm", count: 3)
        let start = Date()
        let spinning = Flag()
        let spun = Task {
            defer { spinning.set(false) }
            return try await HTTP.request(.GET, db + "/_design/app/_view/v")
        }
        try await Task.sleep(for: .milliseconds(300))
        let answered = try await HTTP.json(.GET, calm + "/_design/app/_view/by_type?group=true")
        XCTAssertEqual(answered.json["rows"]?.arrayValue?.count, 3)
        XCTAssertNil(spinning.value, "another database's view was answered while the runaway still ran")
        let answer = try await spun.value
        XCTAssertEqual(answer.status, 500)
        XCTAssertEqual(answer.json, ["error": "os_process_error", "reason": "OS process timed out."])
        // The connection was watched for the client leaving, so it cannot serve another request:
        // the failure says so, or the client's next request would go into a closed channel.
        XCTAssertEqual(answer.headers["connection"].first?.lowercased(), "close")
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 5, "stopped at CouchDB's os_process_timeout, not before")
        let info = try await HTTP.json(.GET, db + "/_design/app/_info")
        XCTAssertEqual(info.json["view_index"]?["update_seq"], 0, "nothing the runaway did not map is counted as indexed")
    }

    func testAnEngineKilledMidIndexLosesNothingAndTheIndexGoesOn() async throws {
        let server = try await startListener()
        // Each document costs its map about a millisecond, so the build takes a few seconds.
        let slow: JSON = ["views": ["slow": ["map": "function (doc) { var until = 0; for (var i = 0; i < 20000; i++) until += i; emit(doc.n, null); }"]]]
        let db = try await database(server, count: 6_000, design: slow)
        let query = Task { try await HTTP.json(.GET, db + "/_design/app/_view/slow?limit=1") }
        var killed = 0
        for _ in 0..<100 where killed == 0 {
            try await Task.sleep(for: .milliseconds(100))
            for pid in Self.queryServerChildren() where kill(pid, SIGKILL) == 0 { killed += 1 }
        }
        XCTAssertGreaterThan(killed, 0, "a query server was running the map")
        let first = try await query.value
        XCTAssertTrue(first.status == 200 || first.json["error"] == "os_process_error", "\(first)")
        let all = try await HTTP.json(.GET, db + "/_design/app/_view/slow?skip=5999")
        XCTAssertEqual(all.json, ["total_rows": 6_000, "offset": 5_999, "rows": [["id": "d05999", "key": 5_999, "value": nil]]])
    }

    func testADesignDocumentReplicatesAndTheOtherNodeAnswersTheSame() async throws {
        let a = try await startListener()
        let b = try await startListener()
        let db = try await database(a, count: 50)
        try await assertEqual(try await HTTP.json(.PUT, b.url + "/db").status, 201)
        let replication = await Replicator(ReplicationConfiguration(source: try RemoteEndpoint(url: db), target: try RemoteEndpoint(url: b.url + "/db"))).run()
        XCTAssertNil(replication.lastError)
        for query in ["?group=true", "?reduce=false&startkey=%22note%22&limit=5", "?reduce=false&descending=true&skip=3&limit=4"] {
            let here = try await HTTP.json(.GET, db + "/_design/app/_view/by_type" + query)
            let there = try await HTTP.json(.GET, b.url + "/db/_design/app/_view/by_type" + query)
            XCTAssertEqual(here.status, 200)
            XCTAssertEqual(here.json, there.json, query)
        }
    }

    func testADesignDocumentWhoseViewsCouldNeverBeQueriedIsRefusedAsCouchDBRefusesIt() async throws {
        let server = try await startListener()
        let db = server.url + "/db"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        for (design, reason) in [
            (["views": ["v": ["reduce": "_count"]]], "View `v` must contain map function"),
            (["views": ["v": ["map": 1]]], "`views.v.map` field must have string type"),
            (["views": ["v": ["map": "function (doc) {}", "reduce": "_median"]]], "`_median` is not a supported reduce function."),
            (["views": ["lib": "x"]], "`views.lib` field must have object type"),
            (["views": "v"], "`views` field must have object type"),
            (["language": 1], "`language` field must have string type"),
        ] as [(JSON, String)] {
            let answer = try await HTTP.json(.PUT, db + "/_design/bad", design)
            XCTAssertEqual(answer.status, 400, reason)
            XCTAssertEqual(answer.json, ["error": "invalid_design_doc", "reason": .string(reason)])
        }
        // Mango's indexes are design documents of another language, with views of their own form.
        try await assertEqual(try await HTTP.json(.POST, db + "/_index", ["index": ["fields": ["n"]], "ddoc": "idx"]).status, 200)
    }

    /// The query server processes this test process started.
    private static func queryServerChildren() -> [pid_t] {
        let me = getpid()
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry),
                let status = try? String(contentsOfFile: "/proc/\(entry)/status", encoding: .utf8),
                status.split(separator: "\n").contains("PPid:\t\(me)"),
                let command = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(entry)/cmdline")),
                String(decoding: command, as: UTF8.self).contains("query-server")
            else { return nil }
            return pid
        }
    }
}

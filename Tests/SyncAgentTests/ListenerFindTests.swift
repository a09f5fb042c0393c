import AsyncHTTPClient
import Foundation
import JSON
import Store
import SyncAgent
import XCTest

/// Mango over HTTP: `_find`, `_explain` and `_index` as CouchDB answers them,
/// and an index that replicates as a design document.
final class ListenerFindTests: XCTestCase {
    private func database(_ server: TestListener, _ name: String = "db") async throws -> String {
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/" + name).status, 201)
        return server.url + "/" + name
    }

    private func ids(_ answer: (status: Int, json: JSON)) -> [String] {
        answer.json["docs"]?.arrayValue?.compactMap { $0["_id"]?.stringValue } ?? []
    }

    func testFindWithAnIndexPagesSortsAndProjectsAsCouchDBDoes() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let created = try await HTTP.json(.POST, db + "/_index", ["index": ["fields": ["year"]], "name": "by-year", "ddoc": "years"])
        XCTAssertEqual(created.status, 200)
        XCTAssertEqual(created.json, ["result": "created", "id": "_design/years", "name": "by-year"])
        let again = try await HTTP.json(.POST, db + "/_index", ["index": ["fields": ["year"]], "name": "by-year", "ddoc": "years"])
        XCTAssertEqual(again.json["result"], "exists")

        let docs: [JSON] = (0..<30).map { ["_id": .string("film\($0)"), "year": .number(Double(1990 + $0 % 10)), "title": .string("T\($0)")] }
        try await assertEqual(try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": .array(docs)]).status, 201)

        let query: JSON = ["selector": ["year": ["$gte": 1998]], "sort": [["year": "desc"]], "fields": ["_id", "year"],
                           "limit": 4, "execution_stats": true]
        let first = try await HTTP.json(.POST, db + "/_find", query)
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(ids(first), ["film9", "film29", "film19", "film8"], "year desc, then id desc")
        XCTAssertEqual(first.json["docs"]?.arrayValue?.first, ["_id": "film9", "year": 1999])
        XCTAssertNil(first.json["warning"])
        XCTAssertEqual(first.json["execution_stats"]?["results_returned"], 4)
        XCTAssertEqual(first.json["execution_stats"]?["total_keys_examined"], 4)
        XCTAssertNotNil(first.json["execution_stats"]?["execution_time_ms"]?.doubleValue)

        var paged = query.objectValue!
        paged["bookmark"] = first.json["bookmark"]
        let second = try await HTTP.json(.POST, db + "/_find", .object(paged))
        XCTAssertEqual(ids(second), ["film28", "film18"])

        let explained = try await HTTP.json(.POST, db + "/_explain", query)
        XCTAssertEqual(explained.json["index"]?["name"], "by-year")
        XCTAssertEqual(explained.json["dbname"], "db")

        let listed = try await HTTP.json(.GET, db + "/_index")
        XCTAssertEqual(listed.json["total_rows"], 2)
        XCTAssertEqual(listed.json["indexes"]?.arrayValue?.last?["def"], ["fields": [["year": "asc"]]])

        try await assertEqual(try await HTTP.json(.DELETE, db + "/_index/years/json/by-year").json, ["ok": true])
        try await assertEqual(try await HTTP.json(.DELETE, db + "/_index/_design/years/json/by-year").status, 404)
        let unindexed = try await HTTP.json(.POST, db + "/_find", query)
        XCTAssertEqual(unindexed.status, 400)
        XCTAssertEqual(unindexed.json, ["error": "no_usable_index", "reason": "No index exists for this sort, try indexing by the sort fields."])
    }

    func testWithoutAnIndexTheAnswerWarnsAndBadRequestsGetCouchDBsErrors() async throws {
        let server = try await startListener()
        let db = try await database(server)
        try await assertEqual(try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": [["_id": "b", "v": 1], ["_id": "a", "v": 2], ["_id": "_design/d"]]]).status, 201)
        let scan = try await HTTP.json(.POST, db + "/_find", ["selector": ["v": ["$gt": 0]]])
        XCTAssertEqual(ids(scan), ["a", "b"], "id order; design documents are not returned")
        XCTAssertEqual(scan.json["warning"], "No matching index found, create an index to optimize query time.")

        let untyped = try await HTTP.request(.POST, db + "/_find", body: Array(#"{"selector":{}}"#.utf8))
        XCTAssertEqual(untyped.status, 415)
        XCTAssertEqual(untyped.json["error"], "bad_content_type")
        let cases: [(JSON, String)] = [
            (["limit": 1], "missing_required_key"),
            (["selector": ["v": ["$bogus": 1]]], "invalid_operator"),
            (["selector": [:], "sort": [["v": "asc"], ["w": "desc"]]], "unsupported_mixed_sort"),
            (["selector": [:], "limit": -1], "invalid_non_neg_integer"),
            (["selector": [:], "bookmark": "not a bookmark"], "invalid_bookmark"),
            (["selector": [:], "colour": "red"], "invalid_key"),
            (["selector": [:], "fields": "v"], "invalid_fields"),
        ]
        for (body, error) in cases {
            let answer = try await HTTP.json(.POST, db + "/_find", body)
            XCTAssertEqual(answer.status, 400, "\(body)")
            XCTAssertEqual(answer.json["error"]?.stringValue, error, "\(body): \(answer.json)")
            XCTAssertNotNil(answer.json["reason"]?.stringValue)
        }
        try await assertEqual(try await HTTP.json(.GET, db + "/_find").status, 405)
    }

    func testAnIndexMadeHereReplicatesAndAnswersTheSameThere() async throws {
        let a = try await startListener()
        let b = try await startListener()
        let onA = try await database(a, "notes")
        _ = try await database(b, "notes")
        try await assertEqual(try await HTTP.json(.POST, onA + "/_index", ["index": ["fields": ["tag", "n"]], "name": "tag-n"]).status, 200)
        let docs: [JSON] = (0..<200).map { ["_id": .string("n\($0)"), "tag": .string($0 % 3 == 0 ? "work" : "home"), "n": .number(Double($0 % 17))] }
        try await assertEqual(try await HTTP.json(.POST, onA + "/_bulk_docs", ["docs": .array(docs)]).status, 201)

        let outcome = await Replicator(ReplicationConfiguration(
            source: try RemoteEndpoint(url: onA), target: try RemoteEndpoint(url: b.url + "/notes"))).run()
        XCTAssertNil(outcome.lastError)

        let query: JSON = ["selector": ["tag": "work", "n": ["$lt": 5]], "sort": ["tag", "n"], "limit": 100, "execution_stats": true]
        let here = try await HTTP.json(.POST, onA + "/_find", query)
        let there = try await HTTP.json(.POST, b.url + "/notes/_find", query)
        XCTAssertEqual(there.status, 200, "\(there.json)")
        XCTAssertGreaterThan(ids(here).count, 10)
        XCTAssertEqual(ids(there), ids(here))
        XCTAssertNil(there.json["warning"], "the replicated design document is an index there")
        XCTAssertEqual(there.json["execution_stats"]?["total_keys_examined"], .number(Double(ids(here).count)))
    }

    /// A query with no index reads every document. Its client leaving stops it (the
    /// process's CPU falls back to idle), and a client that stays keeps a keep-alive
    /// connection for its next request.
    func testAQueryStopsWhenItsClientLeavesAndAConnectionThatStaysIsKept() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let text = String(repeating: "ab", count: 200) + "!"
        let uploads = (0..<50_000).map { DocumentUpload(["_id": .string("d\($0)"), "text": .string(text)]) }
        for result in try await server.catalog.database("db").bulkDocs(uploads) { _ = try result.result.get() }
        // Each document's text makes this pattern backtrack until its step limit: a scan of 10 s or more.
        let slow = #"{"selector":{"text":{"$regex":"^(a|b|ab)*$"}}}"#

        let leaving = try RawHTTPConnection(url: db)
        try leaving.post("/db/_find", json: slow)
        // The query runs: a core busy while its client waits.
        var busy = 0.0
        try await waitUntil("the query keeps a core busy while its client waits") {
            busy = try await Self.cpuSeconds(over: .milliseconds(250))
            return busy > 0.125  // half a core, as before
        }
        leaving.close()
        // It stops: the process falls back to idle, where a query left running would keep a core busy for seconds more.
        try await waitUntil("the query stopped when its client left (\(busy) s of CPU in a quarter second before)", timeout: .seconds(3)) {
            try await Self.cpuSeconds(over: .milliseconds(250)) < 0.05
        }

        let staying = try RawHTTPConnection(url: db)
        defer { staying.close() }
        for round in 1...2 {
            try staying.post("/db/_find", json: #"{"selector":{"_id":"d7"},"fields":["_id"]}"#)
            XCTAssertTrue(staying.read(until: { $0.components(separatedBy: #"{"docs":[{"_id":"d7"}]"#).count == round + 1 }),
                          staying.text)
        }
        XCTAssertFalse(staying.closedByServer)
        XCTAssertFalse(staying.text.lowercased().contains("connection: close"), staying.text)

        // A slow query whose client waits gets its whole answer; its connection was watched, so it closes then.
        let waiting = try RawHTTPConnection(url: db)
        defer { waiting.close() }
        try waiting.post("/db/_find", json: #"{"selector":{"_id":{"$lt":"d2"},"text":{"$regex":"^(a|b|ab)*$"}},"execution_stats":true}"#)
        var closed = false
        for _ in 0..<600 where !closed {  // waits without holding one of the few threads the query needs
            closed = waiting.closed(within: .milliseconds(1))
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssertTrue(closed, waiting.text)
        XCTAssertTrue(waiting.text.contains(#"{"docs":[],"#), waiting.text)
        XCTAssertTrue(waiting.text.contains(#""total_docs_examined":11112"#), waiting.text)
        XCTAssertTrue(waiting.text.lowercased().contains("connection: close"), waiting.text)
    }

    /// CPU seconds this process spends over `duration`.
    private static func cpuSeconds(over duration: Duration) async throws -> Double {
        func now() -> Double {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        }
        let start = now()
        try await Task.sleep(for: duration)
        return now() - start
    }
}

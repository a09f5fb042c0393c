import AsyncHTTPClient
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
}

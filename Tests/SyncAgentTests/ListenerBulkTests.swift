import AsyncHTTPClient
import Store
import SyncAgent
import XCTest

/// `_bulk_docs`, `_bulk_get`, `_revs_diff` and `_all_docs`.
final class ListenerBulkTests: XCTestCase {
    private func database(_ server: TestListener) async throws -> String {
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        return server.url + "/db"
    }

    func testBulkDocsWithNewEdits() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let answer = try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": [["_id": "a", "n": 1], ["_id": "b", "n": 2], ["_id": "_bad"]]])
        XCTAssertEqual(answer.status, 201)
        let rows = try XCTUnwrap(answer.json.arrayValue)
        XCTAssertEqual(rows.count, 3)
        XCTAssertEqual(rows[0]["ok"], true)
        XCTAssertEqual(rows[0]["id"], "a")
        XCTAssertTrue(rows[0]["rev"]?.stringValue?.hasPrefix("1-") ?? false)
        XCTAssertEqual(rows[2]["error"], "illegal_docid")
        let conflict = try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": [["_id": "a", "n": 3]]])
        XCTAssertEqual(conflict.json.arrayValue?.first?["error"], "conflict")
        XCTAssertEqual(conflict.json.arrayValue?.first?["id"], "a")
        try await assertEqual(try await HTTP.json(.POST, db + "/_bulk_docs", ["nodocs": []]).status, 400)
    }

    func testBulkDocsWithoutNewEditsAnswersOnlyFailures() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let answer = try await HTTP.json(.POST, db + "/_bulk_docs", [
            "new_edits": false,
            "docs": [
                ["_id": "a", "_rev": "3-ccc", "_revisions": ["start": 3, "ids": ["ccc", "bbb", "aaa"]], "v": 3],
                ["_id": "b", "_rev": "1-xyz", "v": 1],
                ["_id": "c", "v": 1],
            ],
        ])
        XCTAssertEqual(answer.status, 201)
        let rows = try XCTUnwrap(answer.json.arrayValue)
        XCTAssertEqual(rows.count, 1, "only the document without _rev fails: \(answer.json)")
        XCTAssertEqual(rows.first?["id"], "c")
        try await assertEqual(try await HTTP.json(.GET, db + "/a").json["_rev"], "3-ccc")
        try await assertEqual(try await HTTP.json(.GET, db + "/b").json["v"], 1)
    }

    func testRevsDiff() async throws {
        let server = try await startListener()
        let db = try await database(server)
        _ = try await HTTP.json(.POST, db + "/_bulk_docs", [
            "new_edits": false,
            "docs": [["_id": "a", "_rev": "2-bbb", "_revisions": ["start": 2, "ids": ["bbb", "aaa"]]]],
        ])
        let diff = try await HTTP.json(.POST, db + "/_revs_diff", ["a": ["2-bbb", "3-ccc"], "z": ["1-zzz"]])
        XCTAssertEqual(diff.status, 200)
        XCTAssertEqual(diff.json["a"]?["missing"], ["3-ccc"])
        XCTAssertEqual(diff.json["a"]?["possible_ancestors"], ["2-bbb"])
        XCTAssertEqual(diff.json["z"]?["missing"], ["1-zzz"])
        XCTAssertNil(diff.json["z"]?["possible_ancestors"])
        let nothingMissing = try await HTTP.json(.POST, db + "/_revs_diff", ["a": ["2-bbb"]])
        XCTAssertEqual(nothingMissing.json, [:])
        try await assertEqual(try await HTTP.json(.POST, db + "/_revs_diff", ["a": "2-bbb"]).status, 400)
    }

    func testBulkGet() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let rev = try await HTTP.json(.PUT, db + "/a", ["n": 1]).json["rev"]!
        let answer = try await HTTP.json(.POST, db + "/_bulk_get?revs=true&latest=true", ["docs": [
            ["id": "a", "rev": rev],
            ["id": "a", "rev": "9-missing"],
            ["id": "nope"],
            ["id": "a"],
        ]])
        XCTAssertEqual(answer.status, 200)
        let results = try XCTUnwrap(answer.json["results"]?.arrayValue)
        XCTAssertEqual(results.count, 4)
        XCTAssertEqual(results[0]["id"], "a")
        let doc = results[0]["docs"]?.arrayValue?.first?["ok"]
        XCTAssertEqual(doc?["n"], 1)
        XCTAssertEqual(doc?["_revisions"]?["start"], 1)
        XCTAssertEqual(results[1]["docs"]?.arrayValue?.first?["error"]?["error"], "not_found")
        XCTAssertEqual(results[1]["docs"]?.arrayValue?.first?["error"]?["rev"], "9-missing")
        XCTAssertEqual(results[2]["docs"]?.arrayValue?.first?["error"]?["id"], "nope")
        XCTAssertEqual(results[3]["docs"]?.arrayValue?.first?["ok"]?["_rev"], rev)
    }

    func testAllDocs() async throws {
        let server = try await startListener()
        let db = try await database(server)
        _ = try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": [["_id": "c"], ["_id": "a"], ["_id": "b"], ["_id": "d"]]])
        let rev = try await HTTP.json(.GET, db + "/d").json["_rev"]!.stringValue!
        _ = try await HTTP.json(.DELETE, db + "/d?rev=" + rev)

        let all = try await HTTP.json(.GET, db + "/_all_docs")
        XCTAssertEqual(all.status, 200)
        XCTAssertEqual(all.json["total_rows"], 3)
        XCTAssertEqual(all.json["offset"], 0)
        XCTAssertEqual(all.json["rows"]?.arrayValue?.map { $0["id"] }, ["a", "b", "c"])
        XCTAssertEqual(all.json["rows"]?.arrayValue?.first?["key"], "a")
        XCTAssertNotNil(all.json["rows"]?.arrayValue?.first?["value"]?["rev"]?.stringValue)

        let page = try await HTTP.json(.GET, db + "/_all_docs?startkey=%22b%22&limit=1&include_docs=true")
        XCTAssertEqual(page.json["offset"], 1)
        XCTAssertEqual(page.json["rows"]?.arrayValue?.map { $0["id"] }, ["b"])
        XCTAssertEqual(page.json["rows"]?.arrayValue?.first?["doc"]?["_id"], "b")

        let descending = try await HTTP.json(.GET, db + "/_all_docs?descending=true")
        XCTAssertEqual(descending.json["rows"]?.arrayValue?.map { $0["id"] }, ["c", "b", "a"])

        let keys = try await HTTP.json(.POST, db + "/_all_docs", ["keys": ["c", "zz", "d"]])
        let rows = try XCTUnwrap(keys.json["rows"]?.arrayValue)
        XCTAssertEqual(rows.count, 3)
        XCTAssertEqual(rows[0]["id"], "c")
        XCTAssertEqual(rows[1]["key"], "zz")
        XCTAssertEqual(rows[1]["error"], "not_found")
        XCTAssertEqual(rows[2]["value"]?["deleted"], true)
        try await assertEqual(try await HTTP.json(.GET, db + "/_all_docs?startkey=notjson").status, 400)
    }

    func testAllDocsAcrossManyPages() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let ids = (0..<2500).map { String(format: "id%05d", $0) }
        _ = try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": .array(ids.shuffled().map { ["_id": .string($0)] })])
        // Pages of documents hold 1000 rows: these listings span several.
        let all = try await HTTP.json(.GET, db + "/_all_docs?include_docs=true")
        XCTAssertEqual(all.json["rows"]?.arrayValue?.compactMap { $0["doc"]?["_id"]?.stringValue }, ids)
        let limited = try await HTTP.json(.GET, db + "/_all_docs?limit=1500&skip=10&descending=true&include_docs=true")
        XCTAssertEqual(limited.json["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue }, Array(ids.reversed().dropFirst(10).prefix(1500)))
        let ranged = try await HTTP.json(.GET, db + "/_all_docs?startkey=%22id00500%22&endkey=%22id02000%22&inclusive_end=false&include_docs=true")
        XCTAssertEqual(ranged.json["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue }, Array(ids[500..<2000]))
        XCTAssertEqual(ranged.json["offset"], 500)
    }
}

import Foundation
import JSON
import Store
import SyncAgent
import XCTest

/// `_changes` filtered by a design document's JavaScript: `filter=DESIGN/NAME` with CouchDB's
/// `req`, and `filter=_view&view=DESIGN/NAME`, on the normal, longpoll, continuous and
/// eventsource feeds.
final class ListenerFilterTests: XCTestCase {
    private static let design: JSON = [
        "filters": [
            "by_type": "function (doc, req) { return doc.type === req.query.type; }",
            "mine": "function (doc, req) { return doc.owner === req.userCtx.name && req.method === 'GET' && req.path[1] === '_changes'; }",
        ],
        "views": ["reds": ["map": "function (doc) { if (doc.colour === 'red') emit(doc._id, null); }"]],
    ]

    private func filteredDatabase(_ server: TestListener) async throws -> String {
        let db = server.url + "/db"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        try await assertEqual(try await HTTP.json(.PUT, db + "/_design/app", Self.design).status, 201)
        let docs: [JSON] = [
            ["_id": "a1", "type": "a", "colour": "red"], ["_id": "b1", "type": "b", "colour": "red"],
            ["_id": "a2", "type": "a"], ["_id": "b2", "type": "b", "owner": "bob"], ["_id": "a3", "type": "a", "owner": "bob"],
        ]
        try await assertEqual(try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": .array(docs)]).status, 201)
        return db
    }

    private func ids(_ answer: JSON) -> [String] {
        (answer["results"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
    }

    func testAFilterFunctionPassesWhatItReturnsTrueForWithTheRequestsQuery() async throws {
        let server = try await startListener()
        let db = try await filteredDatabase(server)
        let typeA = try await HTTP.json(.GET, db + "/_changes?filter=app/by_type&type=a")
        XCTAssertEqual(typeA.status, 200)
        XCTAssertEqual(ids(typeA.json), ["a1", "a2", "a3"])
        XCTAssertEqual(typeA.json["last_seq"], 6, "last_seq is where the feed read to, not the last row passed")
        let limited = try await HTTP.json(.GET, db + "/_changes?filter=app/by_type&type=b&limit=1&include_docs=true")
        XCTAssertEqual(ids(limited.json), ["b1"])
        XCTAssertEqual(limited.json["results"]?.arrayValue?.first?["doc"]?["type"], "b")
        let views = try await HTTP.json(.GET, db + "/_changes?filter=_view&view=app/reds")
        XCTAssertEqual(ids(views.json), ["a1", "b1"])
        let posted = try await HTTP.json(.POST, db + "/_changes?filter=app/by_type&type=b", [:])
        XCTAssertEqual(ids(posted.json), ["b1", "b2"])
    }

    func testTheFilterSeesWhoAsks() async throws {
        let server = try await startListener(users: ["bob": "bob-password"])
        let db = try await filteredDatabase(server)
        try await assertEqual(try await HTTP.json(.PUT, db + "/_security", ["members": ["names": ["bob"]]]).status, 200)
        let asBob = try await HTTP.json(.GET, server.anonymousURL + "/db/_changes?filter=app/mine", headers: [HTTP.basic("bob", "bob-password")])
        XCTAssertEqual(ids(asBob.json), ["b2", "a3"])
        let asAdmin = try await HTTP.json(.GET, db + "/_changes?filter=app/mine")
        XCTAssertEqual(ids(asAdmin.json), [])
    }

    func testEachLeafIsFilteredWithAllDocs() async throws {
        let server = try await startListener()
        let db = try await filteredDatabase(server)
        let conflict = try await HTTP.json(.POST, db + "/_bulk_docs", ["new_edits": false, "docs": [
            ["_id": "c", "_rev": "1-aaa", "type": "a"], ["_id": "c", "_rev": "1-bbb", "type": "b"],
        ]])
        XCTAssertEqual(conflict.json, [])
        let all = try await HTTP.json(.GET, db + "/_changes?filter=app/by_type&type=a&style=all_docs&since=6")
        XCTAssertEqual(all.json["results"]?.arrayValue?.first?["changes"], [["rev": "1-aaa"]], "only the leaf that passes: \(all.json)")
        let main = try await HTTP.json(.GET, db + "/_changes?filter=app/by_type&type=a&since=6")
        XCTAssertEqual(ids(main.json), [], "the winner (1-bbb) does not pass")
    }

    func testWaitingFeedsSendOnlyWhatPasses() async throws {
        let server = try await startListener()
        let db = try await filteredDatabase(server)
        let writes = Task {
            try await Task.sleep(for: .milliseconds(300))
            _ = try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": [["_id": "b9", "type": "b"], ["_id": "a9", "type": "a"]]])
        }
        let continuous = try await HTTP.request(.GET, db + "/_changes?feed=continuous&filter=app/by_type&type=a&since=6&timeout=1500")
        try await writes.value
        let lines = String(decoding: continuous.body, as: UTF8.self).split(separator: "\n").compactMap { try? JSON(parsing: String($0)) }
        XCTAssertEqual(lines.compactMap { $0["id"]?.stringValue }, ["a9"])
        XCTAssertEqual(lines.last?["last_seq"], 8)
        let longpoll = try await HTTP.json(.GET, db + "/_changes?feed=longpoll&filter=app/by_type&type=a&since=0")
        XCTAssertEqual(ids(longpoll.json), ["a1", "a2", "a3", "a9"])
        let events = try await HTTP.request(.GET, db + "/_changes?feed=eventsource&filter=app/by_type&type=b&since=6&timeout=300")
        XCTAssertEqual(String(decoding: events.body, as: UTF8.self).components(separatedBy: "data: ").count - 1, 1, "one event: b9")
    }

    func testMistakesGetCouchDBsErrors() async throws {
        let server = try await startListener()
        let db = try await filteredDatabase(server)
        let noDesign = try await HTTP.json(.GET, db + "/_changes?filter=nothing/here")
        XCTAssertEqual(noDesign.status, 404)
        XCTAssertEqual(noDesign.json, ["error": "not_found", "reason": "missing"])
        let noFunction = try await HTTP.json(.GET, db + "/_changes?filter=app/nope")
        XCTAssertEqual(noFunction.status, 404)
        XCTAssertEqual(noFunction.json, ["error": "not_found", "reason": "missing json key: nope"])
        let malformed = try await HTTP.json(.GET, db + "/_changes?filter=justone")
        XCTAssertEqual(malformed.status, 400)
        XCTAssertEqual(malformed.json["reason"], "`filter` must be of the form `designname/filtername`")
        let noView = try await HTTP.json(.GET, db + "/_changes?filter=_view")
        XCTAssertEqual(noView.json, ["error": "bad_request", "reason": "`view` filter parameter is not provided."])
    }
}

import AsyncHTTPClient
import JSON
import Store
import SyncAgent
import XCTest

/// `_changes`: the normal feed's layout and options, filters, and the waiting
/// feeds (longpoll, continuous, eventsource).
final class ListenerChangesTests: XCTestCase {
    private func database(_ server: TestListener, docs: [JSON]) async throws -> String {
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        if !docs.isEmpty {
            try await assertEqual(try await HTTP.json(.POST, server.url + "/db/_bulk_docs", ["docs": .array(docs)]).status, 201)
        }
        return server.url + "/db"
    }

    func testNormalFeedLayoutAndOptions() async throws {
        let server = try await startListener()
        let db = try await database(server, docs: [["_id": "a", "type": "x"], ["_id": "b", "type": "y"], ["_id": "c", "type": "x"]])
        let rev = try await HTTP.json(.GET, db + "/b").json["_rev"]!.stringValue!
        _ = try await HTTP.json(.DELETE, db + "/b?rev=" + rev)

        let feed = try await HTTP.json(.GET, db + "/_changes")
        XCTAssertEqual(feed.status, 200)
        let results = try XCTUnwrap(feed.json["results"]?.arrayValue)
        XCTAssertEqual(results.map { $0["id"] }, ["a", "c", "b"])
        XCTAssertEqual(results.map { $0["seq"] }, [1, 3, 4])
        XCTAssertNotNil(results[0]["changes"]?.arrayValue?.first?["rev"]?.stringValue)
        XCTAssertEqual(results[2]["deleted"], true)
        XCTAssertNil(results[0]["deleted"])
        XCTAssertEqual(feed.json["last_seq"], 4)
        XCTAssertEqual(feed.json["pending"], 0)

        let limited = try await HTTP.json(.GET, db + "/_changes?limit=1&since=1")
        XCTAssertEqual(limited.json["results"]?.arrayValue?.map { $0["id"] }, ["c"])
        XCTAssertEqual(limited.json["last_seq"], 3)
        XCTAssertEqual(limited.json["pending"], 1)
        try await assertEqual(try await HTTP.json(.GET, db + "/_changes?since=%223%22").json["results"]?.arrayValue?.map { $0["id"] }, ["b"])
        let now = try await HTTP.json(.GET, db + "/_changes?since=now")
        XCTAssertEqual(now.json["results"]?.arrayValue?.count, 0)
        XCTAssertEqual(now.json["last_seq"], 4)

        let docs = try await HTTP.json(.GET, db + "/_changes?include_docs=true&descending=true")
        XCTAssertEqual(docs.json["results"]?.arrayValue?.map { $0["id"] }, ["b", "c", "a"])
        XCTAssertEqual(docs.json["results"]?.arrayValue?.last?["doc"]?["type"], "x")

        try await assertEqual(try await HTTP.json(.GET, db + "/_changes?since=abc").status, 400)
        try await assertEqual(try await HTTP.json(.GET, db + "/_changes?feed=sideways").status, 400)
        try await assertEqual(try await HTTP.json(.GET, db + "/_changes?filter=app/none").status, 404)
    }

    func testAllDocsStyleListsEveryLeaf() async throws {
        let server = try await startListener()
        let db = try await database(server, docs: [])
        _ = try await HTTP.json(.POST, db + "/_bulk_docs", ["new_edits": false, "docs": [
            ["_id": "d", "_rev": "1-aaa"], ["_id": "d", "_rev": "1-bbb"],
        ]])
        let main = try await HTTP.json(.GET, db + "/_changes")
        XCTAssertEqual(main.json["results"]?.arrayValue?.first?["changes"]?.arrayValue?.count, 1)
        let all = try await HTTP.json(.GET, db + "/_changes?style=all_docs")
        let changes = all.json["results"]?.arrayValue?.first?["changes"]?.arrayValue?.compactMap { $0["rev"]?.stringValue }
        XCTAssertEqual(changes?.first, "1-bbb")
        XCTAssertEqual(Set(changes ?? []), ["1-aaa", "1-bbb"])
    }

    func testDocIDsAndSelectorFilters() async throws {
        let server = try await startListener()
        let db = try await database(server, docs: [["_id": "a", "type": "x"], ["_id": "b", "type": "y"], ["_id": "c", "type": "x"]])
        let byQuery = try await HTTP.json(.GET, db + "/_changes?filter=_doc_ids&doc_ids=%5B%22c%22%2C%22b%22%5D")
        XCTAssertEqual(byQuery.json["results"]?.arrayValue?.map { $0["id"] }, ["b", "c"])
        let byBody = try await HTTP.json(.POST, db + "/_changes?filter=_doc_ids", ["doc_ids": ["a"]])
        XCTAssertEqual(byBody.json["results"]?.arrayValue?.map { $0["id"] }, ["a"])
        let selected = try await HTTP.json(.POST, db + "/_changes?filter=_selector", ["selector": ["type": "x"]])
        XCTAssertEqual(selected.json["results"]?.arrayValue?.map { $0["id"] }, ["a", "c"])
        try await assertEqual(try await HTTP.json(.POST, db + "/_changes?filter=_selector", [:]).status, 400)
        try await assertEqual(try await HTTP.json(.GET, db + "/_changes?filter=_doc_ids").status, 400)
    }

    func testNormalFeedStreamsManyChangesInPages() async throws {
        let server = try await startListener()
        let db = try await database(server, docs: (0..<2500).map { ["_id": .string(String(format: "doc%05d", $0))] })
        let feed = try await HTTP.json(.GET, db + "/_changes")
        let results = try XCTUnwrap(feed.json["results"]?.arrayValue)
        XCTAssertEqual(results.count, 2500)
        XCTAssertEqual(Set(results.compactMap { $0["id"]?.stringValue }).count, 2500)
        XCTAssertEqual(feed.json["last_seq"], 2500)
        let limited = try await HTTP.json(.GET, db + "/_changes?limit=1200&since=100")
        XCTAssertEqual(limited.json["results"]?.arrayValue?.count, 1200)
        XCTAssertEqual(limited.json["last_seq"], 1300)
        XCTAssertEqual(limited.json["pending"], 1200)
    }

    func testLongpollWaitsForTheNextChange() async throws {
        let server = try await startListener()
        let db = try await database(server, docs: [["_id": "a"]])
        let waiting = Task { try await HTTP.json(.GET, db + "/_changes?feed=longpoll&since=1&timeout=20000") }
        try await waitUntil("the longpoll waits") { server.listener.openFeeds == 1 }
        _ = try await HTTP.json(.PUT, db + "/b", ["x": 1])
        let answer = try await waiting.value
        XCTAssertEqual(answer.json["results"]?.arrayValue?.map { $0["id"] }, ["b"])
        XCTAssertEqual(answer.json["last_seq"], 2)
        let timedOut = try await HTTP.json(.GET, db + "/_changes?feed=longpoll&since=now&timeout=200")
        XCTAssertEqual(timedOut.json["results"]?.arrayValue?.count, 0)
        XCTAssertEqual(timedOut.json["last_seq"], 2)
        // The feed's task ends just after its answer is written.
        for _ in 0..<250 where server.listener.openFeeds > 0 { try await Task.sleep(for: .milliseconds(20)) }
        XCTAssertEqual(server.listener.openFeeds, 0)
    }

    func testContinuousFeedPushesCommitsAndEndsWhenTheClientLeaves() async throws {
        let server = try await startListener()
        let db = try await database(server, docs: [["_id": "a"]])
        let connection = try RawHTTPConnection(url: server.url)
        try connection.get("/db/_changes?feed=continuous&heartbeat=200&since=0")
        XCTAssertTrue(connection.read(until: { $0.contains(#""id":"a""#) }), connection.text)
        XCTAssertEqual(server.listener.openFeeds, 1)

        let written = ContinuousClock.now
        _ = try await HTTP.json(.PUT, db + "/b", ["x": 1])
        XCTAssertTrue(connection.read(until: { $0.contains(#""id":"b""#) }, timeout: .seconds(5)), connection.text)
        let latency = ContinuousClock.now - written
        print("continuous feed delivered a write after \(latency)")
        // A heartbeat is a newline alone in its chunk.
        XCTAssertTrue(connection.read(until: { $0.contains("\r\n1\r\n\n\r\n") }, timeout: .seconds(2)), "heartbeat newline expected")

        connection.close()
        var waited = 0
        while server.listener.openFeeds > 0 && waited < 100 {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }
        XCTAssertEqual(server.listener.openFeeds, 0, "the feed's task should end when the client disconnects")
        // The server still answers.
        try await assertEqual(try await HTTP.json(.GET, db).status, 200)
    }

    func testContinuousFeedFilteredByDocIDsSendsOnlyThoseDocuments() async throws {
        let server = try await startListener()
        let db = try await database(server, docs: [["_id": "a"], ["_id": "b"]])
        let connection = try RawHTTPConnection(url: server.url)
        defer { connection.close() }
        try connection.get("/db/_changes?feed=continuous&heartbeat=500&filter=_doc_ids&doc_ids=%5B%22b%22%2C%22d%22%5D")
        XCTAssertTrue(connection.read(until: { $0.contains(#""id":"b""#) }), connection.text)
        _ = try await HTTP.json(.PUT, db + "/c", ["x": 1])
        _ = try await HTTP.json(.PUT, db + "/d", ["x": 1])
        XCTAssertTrue(connection.read(until: { $0.contains(#""id":"d""#) }), connection.text)
        XCTAssertFalse(connection.text.contains(#""id":"a""#))
        XCTAssertFalse(connection.text.contains(#""id":"c""#))
    }

    func testContinuousFeedTimeoutAndLimitEndWithLastSeq() async throws {
        let server = try await startListener()
        let db = try await database(server, docs: [["_id": "a"], ["_id": "b"]])
        let limited = try await HTTP.request(.GET, db + "/_changes?feed=continuous&limit=1")
        let lines = limited.text.split(separator: "\n")
        XCTAssertEqual(lines.count, 2, limited.text)
        XCTAssertEqual(try JSON(parsing: String(lines[0]))["id"], "a")
        XCTAssertEqual(try JSON(parsing: String(lines[1]))["last_seq"], 1)
        let timedOut = try await HTTP.request(.GET, db + "/_changes?feed=continuous&since=now&timeout=100")
        XCTAssertEqual(timedOut.text, "{\"last_seq\":2,\"pending\":0}\n")
    }

    func testEventSourceFraming() async throws {
        let server = try await startListener()
        _ = try await database(server, docs: [["_id": "a"]])
        let connection = try RawHTTPConnection(url: server.url)
        defer { connection.close() }
        try connection.get("/db/_changes?feed=eventsource&heartbeat=5000")
        XCTAssertTrue(connection.read(until: { $0.contains("\nid: 1\n\n") }), connection.text)
        XCTAssertTrue(connection.text.contains("text/event-stream"))
        XCTAssertTrue(connection.text.contains("data: {\"seq\":1,\"id\":\"a\""))
    }
}

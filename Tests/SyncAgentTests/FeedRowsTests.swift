import JSON
import Store
@testable import SyncAgent
import XCTest

/// The continuous feeds' rows, written once per page for every feed that sends the same.
final class FeedRowsTests: XCTestCase {
    func testAPageIsWrittenOnceForFeedsAskingTheSameAndAgainForOtherShapes() async throws {
        let directory = try TemporaryDirectory(prefix: "feed-rows")
        defer { directory.remove() }
        let db = try Database.open(path: directory.path + "/db.sqlite")
        defer { db.close() }
        try await db.put(["_id": "a"])
        try await db.put(["_id": "b"])
        let page = try db.changes(ChangesOptions()).changes
        let feedRows = FeedRows()
        var writes = 0
        func rows(_ changes: [Change], _ options: ChangesOptions, conflicts: Bool = false, eventSource: Bool = false) -> [UInt8] {
            feedRows.rows(of: changes, in: db, options: options, conflicts: conflicts, eventSource: eventSource) { changes in
                writes += 1
                return Array("\(writes):\(changes.map(\.id))".utf8)
            }
        }
        let plain = ChangesOptions()
        let first = rows(page, plain)
        XCTAssertEqual(rows(page, plain), first, "the same page for the same options: the first feed's bytes")
        XCTAssertEqual(writes, 1)

        var withDocuments = plain
        withDocuments.includeDocuments = true
        var allLeaves = plain
        allLeaves.allLeaves = true
        XCTAssertNotEqual(rows(page, withDocuments), first)
        XCTAssertNotEqual(rows(page, allLeaves), first)
        XCTAssertNotEqual(rows(page, plain, conflicts: true), first)
        XCTAssertNotEqual(rows(page, plain, eventSource: true), first)
        XCTAssertEqual(writes, 5)
        XCTAssertNotEqual(rows(Array(page.prefix(1)), plain), first, "another page")
        XCTAssertEqual(writes, 6)

        var filtered = plain
        filtered.documentIDs = ["a", "b"]
        _ = rows(page, filtered)
        _ = rows(page, filtered)
        XCTAssertEqual(writes, 8, "a filtered feed's rows are its own")
        XCTAssertEqual(rows([], plain), Array("9:[]".utf8), "nothing to share in an empty page")

        // Rows over the budget are not kept; kept pages stay within it together.
        var large = 0
        for _ in 0..<2 {
            _ = feedRows.rows(of: page, in: db, options: allLeaves, conflicts: true, eventSource: true) { _ in
                large += 1
                return [UInt8](repeating: 0x20, count: FeedRows.bytesKept + 1)
            }
        }
        XCTAssertEqual(large, 2)
    }

    /// Feeds of different shapes on one database, woken by the same commits, each get their own rows.
    func testFeedsOfDifferentShapesGetTheirOwnRows() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        _ = try await HTTP.json(.PUT, server.url + "/db/a", ["x": 1])
        let queries = ["style=all_docs&include_docs=true", "style=all_docs", "include_docs=true&conflicts=true"]
        var connections: [RawHTTPConnection] = []
        defer { for connection in connections { connection.close() } }
        for query in queries {
            let connection = try RawHTTPConnection(url: server.url)
            try connection.get("/db/_changes?feed=continuous&heartbeat=500&since=0&" + query)
            XCTAssertTrue(connection.read(until: { $0.contains(#""id":"a""#) }), connection.text)
            connections.append(connection)
        }
        _ = try await HTTP.json(.PUT, server.url + "/db/b", ["x": 2])
        for connection in connections {
            XCTAssertTrue(connection.read(until: { $0.contains(#""id":"b""#) }, timeout: .seconds(5)), connection.text)
        }
        XCTAssertTrue(connections[0].text.contains(#""doc":{"_id":"b""#), connections[0].text)
        XCTAssertFalse(connections[1].text.contains(#""doc""#), connections[1].text)
        XCTAssertTrue(connections[2].text.contains(#""doc":{"_id":"b""#), connections[2].text)
    }
}

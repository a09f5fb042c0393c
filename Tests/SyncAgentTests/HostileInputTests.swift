import AsyncHTTPClient
import Foundation
import JSON
import Store
import XCTest

@testable import SyncAgent

/// Requests an attacker or a broken client sends get CouchDB's error answers,
/// never a crash, a 500 or a document cut short.
final class HostileInputTests: XCTestCase {
    /// Numbers past every integer type: read, checked, and bounded, never trapped on.
    func testHugeNumbersInTheQueryAreCheckedNotTrapped() async throws {
        let server = try await startListener()
        let db = server.url + "/db"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        try await assertEqual(try await HTTP.json(.PUT, db + "/a", ["v": 1]).status, 201)

        // Beyond the database's sequence: CouchDB 3.5's 400 (issue 13), not a trap.
        for since in ["9223372036854775808", "18446744073709551615", "9223372036854775808-opaque"] {
            let answer = try await HTTP.json(.GET, db + "/_changes?since=" + since)
            XCTAssertEqual(answer.status, 400, since)
            XCTAssertEqual(answer.json["reason"], "Malformed sequence supplied in 'since' parameter.", since)
        }
        try await assertEqual(try await HTTP.json(.GET, db + "/_changes?since=99999999999999999999999").status, 400)
        for query in ["limit=99999999999999999999", "limit=9223372036854775807", "heartbeat=99999999999999999999&feed=continuous&limit=1",
                      "timeout=9223372036854775807&feed=longpoll", "feed=continuous&timeout=99999999999999999999&limit=1"] {
            let answer: HTTPAnswer
            do { answer = try await HTTP.request(.GET, db + "/_changes?" + query) } catch { XCTFail("\(query): \(error)"); continue }
            XCTAssertEqual(answer.status, 200, query)
            XCTAssertTrue(answer.text.contains(#""id":"a""#), query)
        }
        for query in ["limit=-1", "limit=1e3", "heartbeat=-5", "timeout=x"] {
            try await assertEqual(try await HTTP.json(.GET, db + "/_changes?" + query).status, 400, query)
        }
        for query in ["skip=9223372036854775807&startkey=%22a%22", "skip=99999999999999999999&limit=99999999999999999999"] {
            let answer = try await HTTP.json(.GET, db + "/_all_docs?" + query)
            XCTAssertEqual(answer.status, 200, query)
            XCTAssertEqual(answer.json["rows"]?.arrayValue?.count, 0, query)
        }
        let selector: JSON = ["selector": ["n": ["$mod": [-1, 0]]]]
        try await assertEqual(try await HTTP.json(.PUT, db + "/edge", ["n": .number(-0x1p63)]).status, 201)
        let modulo = try await HTTP.json(.POST, db + "/_changes?filter=_selector", selector)
        XCTAssertEqual(modulo.json["results"]?.arrayValue?.map { $0["id"] }, ["edge"])
        try await assertEqual(try await HTTP.json(.GET, server.url + "/").status, 200)
    }

    /// A remote's sequences and counts are only ever numbers within range.
    func testAPeersNumbersAreCheckedNotTrapped() {
        XCTAssertNil(ChangeSequence(.number(1e300)).localNumber)
        XCTAssertNil(ChangeSequence(.number(-1)).localNumber)
        XCTAssertEqual(ChangeSequence(.number(42)).localNumber, 42)
        XCTAssertNil(JSON.number(9.2e18).countValue)
        XCTAssertEqual(JSON.number(12).countValue, 12)
    }

    /// `victim\0x` is its own document, over HTTP as in the store.
    func testAnIDHoldingNULDoesNotReachAnotherDocument() async throws {
        let server = try await startListener()
        let db = server.url + "/db"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        let victim = try await HTTP.json(.PUT, db + "/victim", ["owner": "alice"])
        XCTAssertEqual(victim.status, 201)
        let put = try await HTTP.json(.PUT, db + "/victim%00x", ["owner": "mallory"])
        XCTAssertEqual(put.status, 201)
        XCTAssertEqual(put.json["id"], "victim\u{0}x")
        let bulk = try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": [["_id": "victim\u{0}y", "_deleted": true]]])
        XCTAssertEqual(bulk.status, 201)
        let read = try await HTTP.json(.GET, db + "/victim")
        XCTAssertEqual(read.json["owner"], "alice")
        XCTAssertEqual(read.json["_rev"], victim.json["rev"])
        try await assertEqual(try await HTTP.json(.PUT, db + "/_design%2F", ["v": 1]).status, 400)
    }

    /// Bodies that are too large, cut short or badly chunked: 413 and 400 with CouchDB's JSON, never 500.
    func testBrokenBodiesGetCouchDBErrors() async throws {
        let server = try await startListener { $0.maximumRequestSize = 1024 }
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        func exchange(_ request: String, thenClose: Bool = false) throws -> String {
            let connection = try RawHTTPConnection(url: server.url)
            defer { connection.close() }
            try connection.write(Array(request.utf8))
            if thenClose { connection.finishSending() }
            _ = connection.read(until: { $0.contains("}\n") || $0.contains("\r\n\r\n") && $0.contains("Content-Length: 0") })
            return connection.text
        }
        let admin = Data("\(TestListener.adminName):\(TestListener.adminPassword)".utf8).base64EncodedString()
        let head = "POST /db/_bulk_docs HTTP/1.1\r\nHost: x\r\nAuthorization: Basic \(admin)\r\nContent-Type: application/json\r\n"
        let big = #"{"docs":[{"x":""# + String(repeating: "y", count: 4096) + #""}]}"#
        let chunked = head + "Transfer-Encoding: chunked\r\n\r\n" + String(big.utf8.count, radix: 16) + "\r\n" + big + "\r\n0\r\n\r\n"
        let tooLarge = try exchange(chunked)
        XCTAssertTrue(tooLarge.hasPrefix("HTTP/1.1 413"), tooLarge)
        XCTAssertTrue(tooLarge.contains(#""error":"too_large""#), tooLarge)

        let badChunk = try exchange(head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
        XCTAssertTrue(badChunk.hasPrefix("HTTP/1.1 400"), badChunk)
        XCTAssertTrue(badChunk.contains(#""error":"bad_request""#), badChunk)

        let truncated = try exchange(head + "Content-Length: 100\r\n\r\n{\"docs\":[", thenClose: true)
        XCTAssertTrue(truncated.hasPrefix("HTTP/1.1 400"), truncated)
        XCTAssertTrue(truncated.contains(#""error":"bad_request""#), truncated)

        let boundary = "abc123"
        let multipart = "--\(boundary)\r\nContent-Type: application/json\r\n\r\n" + big + "\r\n--\(boundary)--"
        let answer = try await HTTP.request(.PUT, server.url + "/db/doc", body: Array(multipart.utf8),
                                            headers: [("Content-Type", "multipart/related; boundary=\"\(boundary)\"")])
        XCTAssertEqual(answer.status, 413, answer.text)
        XCTAssertEqual(answer.json["error"], "too_large")
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db").status, 200)
    }

    /// JSON nested deeper than the parser takes is refused with an error that says so, not
    /// "invalid UTF-8 JSON"; as deep as it takes is a document like any other.
    func testJSONNestedTooDeepIsNamedAsSuch() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        func nested(_ depth: Int) -> [UInt8] { Array(("{\"a\":" + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}").utf8) }
        for path in ["/db/deep", "/db/_bulk_docs", "/db/_changes?filter=_selector"] {
            let answer = try await HTTP.request(path == "/db/deep" ? .PUT : .POST, server.url + path, body: nested(JSON.maximumDepth + 1),
                                                headers: [("Content-Type", "application/json")])
            XCTAssertEqual(answer.status, 400, path)
            XCTAssertEqual(answer.json, ["error": "bad_request", "reason": .string("JSON is nested more than \(JSON.maximumDepth) levels deep")], path)
        }
        let broken = try await HTTP.request(.PUT, server.url + "/db/broken", body: Array("{\"a\":".utf8), headers: [("Content-Type", "application/json")])
        XCTAssertEqual(broken.json, ["error": "bad_request", "reason": "invalid UTF-8 JSON"])
        let deepest = try await HTTP.request(.PUT, server.url + "/db/deepest", body: nested(JSON.maximumDepth), headers: [("Content-Type", "application/json")])
        XCTAssertEqual(deepest.status, 201, deepest.text)
    }

    /// SIGTERM stops `syncd serve` although a client asked for a large answer and never reads it
    /// (the server's writes wait on it for ever) and another waits on a longpoll feed.
    func testSIGTERMStopsServeWhateverRequestsRun() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-serve-sigterm")
        defer { directory.remove() }
        try ServeProcess.addAdmin(to: directory.path)
        let server = try await ServeProcess.start(["--port", "0", "--data", directory.path])
        try await assertEqual(try await HTTP.json(.PUT, server.adminURL + "/db").status, 201)
        let filler = String(repeating: "x", count: 1000)
        for batch in 0..<20 {
            let docs: [JSON] = (0..<1000).map { ["_id": .string("d\(batch)-\($0)"), "filler": .string(filler)] }
            try await assertEqual(try await HTTP.json(.POST, server.adminURL + "/db/_bulk_docs", ["docs": .array(docs)]).status, 201)
        }
        let stalled = try RawHTTPConnection(url: server.adminURL)
        defer { stalled.close() }
        try stalled.get("/db/_all_docs?include_docs=true")  // 20 MB that nobody reads
        let waiting = try RawHTTPConnection(url: server.adminURL)
        defer { waiting.close() }
        try waiting.get("/db/_changes?feed=longpoll&since=now&timeout=60000")
        // Both are being answered: three GETs in progress with the one that asks.
        try await waitUntil("both requests are in progress") {
            let metrics = try await HTTP.request(.GET, server.adminURL + "/_node/_local/_prometheus").text
            let active = metrics.split(separator: "\n").first {
                $0.hasPrefix("http_server_active_requests{") && $0.contains(#"http_request_method="GET""#)
            }
            return active.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } == 3
        }
        let status = await server.stop()
        XCTAssertNotEqual(status, -1, "still running 20 s after SIGTERM")
    }

    /// The key file is checked on load: one others may read is refused; the directory made is the owner's.
    func testTheKeyFileMustBeTheOwnersOnly() throws {
        let directory = try TemporaryDirectory(prefix: "syncd-identity-mode")
        defer { directory.remove() }
        let path = directory.path + "/node"
        _ = try NodeIdentity.loadOrCreate(in: path)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int, 0o700)
        let key = path + "/" + NodeIdentity.keyFile
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int, 0o600)
        _ = try NodeIdentity.loadOrCreate(in: path)
        chmod(key, 0o644)
        XCTAssertThrowsError(try NodeIdentity.loadOrCreate(in: path)) { error in
            XCTAssertTrue("\(error)".contains("chmod 600"), "\(error)")
        }
    }
}

import Foundation
import JSON
import NIOCore
import Store
import XCTest

@testable import SyncAgent

/// What one client, or a crowd of them, may hold open on the listener:
/// connections, waiting feeds, multipart parts, and how big an answer it can
/// make the listener build.
final class ListenerLimitsTests: XCTestCase {
    /// A connection from the loopback address `source`.
    private func connect(_ server: TestListener, from source: String = "127.0.0.1") throws -> RawHTTPConnection {
        try RawHTTPConnection(url: server.url, source: source)
    }

    /// Sends `GET /` on `connection` and returns the status line's code, `nil` if none came.
    private func status(of connection: RawHTTPConnection) throws -> Int? {
        try connection.get("/")
        guard connection.read(until: { $0.contains("\r\n\r\n") && $0.contains("}") }) else { return nil }
        return connection.text.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    func testConnectionsBeyondTheLimitsGetCouchDBErrorsAndTheSlotsComeBack() async throws {
        let server = try await startListener { $0.limits.maximumConnections = 3; $0.limits.maximumConnectionsPerClient = 2 }
        let first = try connect(server), second = try connect(server)
        XCTAssertEqual(try status(of: first), 200, first.text)
        XCTAssertEqual(try status(of: second), 200, second.text)

        // A third from the same address: 429, JSON, closed.
        let third = try connect(server)
        XCTAssertEqual(try status(of: third), 429, third.text)
        XCTAssertTrue(third.text.contains(#""error":"too_many_requests""#), third.text)
        XCTAssertTrue(third.text.lowercased().contains("connection: close"), third.text)
        third.close()

        // Another address still has room until the listener holds three.
        let other = try connect(server, from: "127.0.0.2")
        XCTAssertEqual(try status(of: other), 200, other.text)
        let fourth = try connect(server, from: "127.0.0.3")
        XCTAssertEqual(try status(of: fourth), 503, fourth.text)
        XCTAssertTrue(fourth.text.contains(#""error":"service_unavailable""#), fourth.text)
        XCTAssertTrue(fourth.text.lowercased().contains("retry-after: 1"), fourth.text)
        fourth.close()

        // Closing one gives its slot back.
        first.close()
        var admitted: Int?
        for _ in 0..<100 {
            let again = try connect(server)
            admitted = try status(of: again)
            again.close()
            if admitted == 200 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTAssertEqual(admitted, 200)
        second.close()
        other.close()
    }

    func testWaitingFeedsPerClientAreBounded() async throws {
        let server = try await startListener { $0.limits.maximumFeedsPerClient = 2 }
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        var feeds: [RawHTTPConnection] = []
        for _ in 0..<2 {
            let feed = try RawHTTPConnection(url: server.url)
            try feed.get("/db/_changes?feed=continuous&heartbeat=1000")
            XCTAssertTrue(feed.read(until: { $0.contains("200 OK") }), feed.text)
            feeds.append(feed)
        }
        let refused = try await HTTP.json(.GET, server.url + "/db/_changes?feed=longpoll&timeout=60000")
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(refused.json["error"], "too_many_requests")
        // A normal feed does not wait and is not counted.
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db/_changes").status, 200)

        feeds.removeFirst().close()
        var status = 0
        for _ in 0..<100 {
            status = try await HTTP.json(.GET, server.url + "/db/_changes?feed=longpoll&timeout=10").status
            if status == 200 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTAssertEqual(status, 200)
        for feed in feeds { feed.close() }
    }

    func testMultipartPartsAreBounded() async throws {
        // The reader refuses more parts than it was told to read.
        var body = Array("--xyz\r\n\r\n{}".utf8)
        for _ in 0..<5 { body += Array("\r\n--xyz\r\n\r\nabc".utf8) }
        body += Array("\r\n--xyz--".utf8)
        let reader = MultipartReader(boundary: "xyz", body: AsyncStream { $0.yield(ByteBuffer(bytes: body)); $0.finish() }, maximumParts: 3)
        var read = 0
        do {
            while try await reader.nextPart() != nil { read += 1 }
            XCTFail("read \(read) parts past the maximum")
        } catch MultipartError.tooManyParts(let maximum) {
            XCTAssertEqual(maximum, 3)
            XCTAssertEqual(read, 3)
        }

        // An upload's parts are the attachments that follow, each once: anything else is 400.
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        let document: JSON = ["_attachments": ["a.txt": ["follows": true, "content_type": "text/plain", "length": 3]]]
        var upload = Array("--b\r\nContent-Type: application/json\r\n\r\n".utf8) + document.serializedBytes()
        for name in ["a.txt", "a.txt", "b.txt"] {
            upload += Array("\r\n--b\r\nContent-Disposition: attachment; filename=\"\(name)\"\r\n\r\nabc".utf8)
        }
        upload += Array("\r\n--b--".utf8)
        let answer = try await HTTP.request(.PUT, server.url + "/db/doc", body: upload,
                                            headers: [("Content-Type", "multipart/related; boundary=\"b\"")])
        XCTAssertEqual(answer.status, 400, answer.text)
        XCTAssertEqual(answer.json["error"], "bad_request")
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db/doc").status, 404)
        // Nothing staged stays pinned: compaction removes what the refused upload wrote.
        try await assertEqual(try await HTTP.json(.POST, server.url + "/db/_compact", [:] as JSON).status, 202)
        let files = (try? FileManager.default.subpathsOfDirectory(atPath: server.directory + "/db.sqlite.attachments")) ?? []
        XCTAssertEqual(files.filter { $0 != "tmp" }, [])
    }

    func testBulkGetIsStreamedAResultAtATime() async throws {
        let server = try await startListener()
        let db = server.url + "/db"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        let filler = String(repeating: "x", count: 50_000)
        var docs: [JSON] = []
        for index in 0..<40 { docs.append(["_id": .string("d\(index)"), "filler": .string(filler)]) }
        try await assertEqual(try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": .array(docs)]).status, 201)
        let requests: [JSON] = (0..<40).map { ["id": .string("d\($0)")] } + [["rev": "1-x"], ["id": "missing"]]
        let answer = try await HTTP.request(.POST, db + "/_bulk_get", body: JSON.object(["docs": .array(requests)]).serializedBytes(),
                                            headers: [("Content-Type", "application/json")])
        XCTAssertEqual(answer.status, 200)
        // Chunked: written as it is read, not built whole with a length.
        XCTAssertNil(answer.header("Content-Length"))
        let results = try XCTUnwrap(answer.json["results"]?.arrayValue)
        XCTAssertEqual(results.count, 42)
        XCTAssertEqual(results[39]["docs"]?.arrayValue?.first?["ok"]?["filler"]?.stringValue?.count, 50_000)
        XCTAssertEqual(results[40]["docs"]?.arrayValue?.first?["error"]?["error"], "bad_request")
        XCTAssertEqual(results[41]["docs"]?.arrayValue?.first?["error"]?["error"], "not_found")
        // A bad `atts_since` is still a 400 before anything is sent.
        let bad = try await HTTP.json(.POST, db + "/_bulk_get", ["docs": [["id": "d0", "atts_since": "nope"]]])
        XCTAssertEqual(bad.status, 400)
    }
}

/// `GET doc?open_revs=…` is written a revision at a time.
final class OpenRevisionsStreamingTests: XCTestCase {
    func testOpenRevsAnswersAreStreamedAsJSONAndAsMultipart() async throws {
        let server = try await startListener()
        let db = server.url + "/db"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        let filler = String(repeating: "y", count: 40_000)
        var docs: [JSON] = []
        for index in 0..<30 {
            docs.append(["_id": "doc", "_rev": .string("1-\(String(format: "%032x", index))"), "n": .number(Double(index)),
                         "filler": .string(filler)])
        }
        try await assertEqual(try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": .array(docs), "new_edits": false]).status, 201)

        let json = try await HTTP.request(.GET, db + "/doc?open_revs=all")
        XCTAssertEqual(json.status, 200)
        XCTAssertNil(json.header("Content-Length"), "written as it is read, not built whole")
        let answers = try XCTUnwrap(json.json.arrayValue)
        XCTAssertEqual(answers.count, 30)
        XCTAssertEqual(Set(answers.compactMap { $0["ok"]?["n"]?.intValue }), Set(0..<30))
        XCTAssertTrue(answers.allSatisfy { $0["ok"]?["filler"]?.stringValue == filler })

        let missing = try await HTTP.json(.GET, db + "/doc?open_revs=%5B%221-" + String(format: "%032x", 3) + "%22,%229-zz%22%5D")
        XCTAssertEqual(missing.json.arrayValue?.count, 2)
        XCTAssertEqual(missing.json.arrayValue?.last?["missing"], "9-zz")

        let mixed = try await HTTP.request(.GET, db + "/doc?open_revs=all", headers: [("Accept", "multipart/mixed")])
        XCTAssertEqual(mixed.status, 200)
        XCTAssertNil(mixed.header("Content-Length"))
        let type = MediaType(parsing: try XCTUnwrap(mixed.header("Content-Type")))
        XCTAssertEqual(type.type, "multipart/mixed")
        let reader = MultipartReader(boundary: try XCTUnwrap(type.boundary),
                                     body: AsyncStream { $0.yield(ByteBuffer(bytes: mixed.body)); $0.finish() })
        var numbers: Set<Int> = []
        while try await reader.nextPart() != nil {
            let part = try JSON(parsing: try await reader.readBody(limit: 1 << 20))
            if let n = part["n"]?.intValue { numbers.insert(n) }
        }
        XCTAssertEqual(numbers, Set(0..<30))
    }
}

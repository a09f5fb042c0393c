import Foundation
import JSON
import Store
@testable import SyncAgent
import XCTest

/// CouchDB's size bounds on the listener's writes, answered as CouchDB answers them: a document
/// body over `max_document_size` is 413 `document_too_large` with its id as the reason, an
/// attachment over the attachment limit 413 `attachment_too_large` with its name; an attachment
/// refused or cut off leaves no file, staged or stored.
final class ListenerSizeLimitTests: XCTestCase {
    /// The content files of database `db` and the files in its staging folder (`tmp/`).
    private func files(_ server: TestListener) -> (stored: [String], staging: [String]) {
        let folder = server.directory + "/db.sqlite.attachments"
        let stored = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0 != "tmp" }
        let staging = (try? FileManager.default.contentsOfDirectory(atPath: folder + "/tmp")) ?? []
        return (stored, staging)
    }

    private func database(_ server: TestListener) async throws -> String {
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        return server.url + "/db"
    }

    /// A body of exactly `size` bytes as the store counts it: `{"t":"xxx…"}`.
    private func body(_ size: Int) -> JSON.Object { ["t": .string(String(repeating: "x", count: size - 8))] }

    private func related(_ document: JSON, parts: [(String, [UInt8])]) -> [UInt8] {
        var bytes = Array("--abc\r\nContent-Type: application/json\r\n\r\n".utf8) + document.serializedBytes()
        for (name, content) in parts {
            bytes += Array("\r\n--abc\r\nContent-Disposition: attachment; filename=\"\(name)\"\r\n\r\n".utf8) + content
        }
        return bytes + Array("\r\n--abc--".utf8)
    }

    func testDocumentOverMaxDocumentSizeIs413WithItsID() async throws {
        let server = try await startListener(maximumDocumentSize: 1000)
        let db = try await database(server)
        try await assertEqual(try await HTTP.json(.PUT, db + "/edge", .object(body(1000))).status, 201)

        let put = try await HTTP.json(.PUT, db + "/big", .object(body(1001)))
        XCTAssertEqual(put.status, 413)
        XCTAssertEqual(put.json, ["error": "document_too_large", "reason": "big"])
        var posted = body(1001)
        posted["_id"] = "posted"
        let post = try await HTTP.json(.POST, db, .object(posted))
        XCTAssertEqual(post.status, 413)
        XCTAssertEqual(post.json, ["error": "document_too_large", "reason": "posted"])

        // The JSON part of a multipart/related upload is held to it the same way.
        var multipart = body(1001)
        multipart["_attachments"] = ["a.txt": ["follows": true, "content_type": "text/plain", "length": 5]]
        let related = try await HTTP.request(.PUT, db + "/related", body: related(.object(multipart), parts: [("a.txt", Array("hello".utf8))]),
                                             headers: [("Content-Type", "multipart/related; boundary=\"abc\"")])
        XCTAssertEqual(related.status, 413, related.text)
        XCTAssertEqual(related.json, ["error": "document_too_large", "reason": "related"])

        // As CouchDB 3.5: one document over the limit fails the whole `_bulk_docs`, and nothing is written.
        let bulk = try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": [["_id": "a", "v": 1], .object(body(1001).merging(["_id": "huge"])), ["_id": "c", "v": 3]]])
        XCTAssertEqual(bulk.status, 413)
        XCTAssertEqual(bulk.json, ["error": "document_too_large", "reason": "huge"])
        for id in ["a", "huge", "c"] { try await assertEqual(try await HTTP.json(.GET, db + "/" + id).status, 404) }
        try await assertEqual(try await HTTP.json(.GET, db).json["doc_count"], 1)
    }

    /// CouchDB counts a document's JSON without its attachments: inline data five times the limit is taken.
    func testInlineAttachmentDataDoesNotCountTowardTheDocumentSize() async throws {
        let server = try await startListener(maximumDocumentSize: 1000)
        let db = try await database(server)
        let content = [UInt8](repeating: 42, count: 5000)
        var document = body(900)
        document["_attachments"] = ["blob.bin": ["content_type": "application/octet-stream", "data": .string(Data(content).base64EncodedString())]]
        let put = try await HTTP.json(.PUT, db + "/photo", .object(document))
        XCTAssertEqual(put.status, 201, "\(put.json)")
        try await assertEqual(try await HTTP.request(.GET, db + "/photo/blob.bin").body, content)
    }

    /// With a `Content-Length` over the limit the answer comes from the head alone: no body is sent here at all.
    func testAttachmentOverTheLimitByContentLengthIsRefusedBeforeItsBody() async throws {
        let server = try await startListener { $0.maximumAttachmentSize = 1000 }
        let db = try await database(server)
        let connection = try RawHTTPConnection(url: db)
        defer { connection.close() }
        try connection.sendHead("PUT", "/db/doc/film.mp4", headers: [("Content-Type", "video/mp4"), ("Content-Length", "1000000")])
        let answer = try XCTUnwrap(connection.readJSONAnswer(), "no answer to the head: \(connection.text)")
        XCTAssertEqual(answer.status, 413)
        XCTAssertEqual(answer.json, ["error": "attachment_too_large", "reason": "film.mp4"])
        XCTAssertEqual(files(server).staging, [])
        XCTAssertEqual(files(server).stored, [])
        try await assertEqual(try await HTTP.json(.GET, db + "/doc").status, 404)
    }

    func testChunkedAttachmentOverTheLimitLeavesNoFile() async throws {
        let server = try await startListener { $0.maximumAttachmentSize = 1000 }
        let db = try await database(server)
        let connection = try RawHTTPConnection(url: db)
        defer { connection.close() }
        try connection.sendHead("PUT", "/db/doc/film.mp4", headers: [("Content-Type", "video/mp4"), ("Transfer-Encoding", "chunked")])
        for _ in 0..<6 { try connection.writeChunk([UInt8](repeating: 1, count: 500)) }
        try connection.writeChunk([])
        let answer = try XCTUnwrap(connection.readJSONAnswer(), "no answer: \(connection.text)")
        XCTAssertEqual(answer.status, 413)
        XCTAssertEqual(answer.json, ["error": "attachment_too_large", "reason": "film.mp4"])
        XCTAssertEqual(files(server).staging, [], "the staged file of the refused upload is removed")
        XCTAssertEqual(files(server).stored, [])
        try await assertEqual(try await HTTP.json(.GET, db + "/doc").status, 404)
        // Within the limit, the same upload is taken.
        let taken = try await HTTP.request(.PUT, db + "/doc/film.mp4", body: [UInt8](repeating: 1, count: 1000), headers: [("Content-Type", "video/mp4")])
        XCTAssertEqual(taken.status, 201, taken.text)
    }

    func testMultipartPartOverTheLimitLeavesNoFile() async throws {
        let server = try await startListener { $0.maximumAttachmentSize = 1000 }
        let db = try await database(server)
        let document: JSON = ["_attachments": ["film.mp4": ["follows": true, "content_type": "video/mp4", "length": 5000]]]
        let answer = try await HTTP.request(.PUT, db + "/doc", body: related(document, parts: [("film.mp4", [UInt8](repeating: 2, count: 5000))]),
                                            headers: [("Content-Type", "multipart/related; boundary=\"abc\"")])
        XCTAssertEqual(answer.status, 413, answer.text)
        XCTAssertEqual(answer.json, ["error": "attachment_too_large", "reason": "film.mp4"])
        XCTAssertEqual(files(server).staging, [])
        XCTAssertEqual(files(server).stored, [])
        try await assertEqual(try await HTTP.json(.GET, db + "/doc").status, 404)
    }

    /// A client that goes away in the middle of a chunked attachment leaves nothing behind:
    /// its staged file, seen while the bytes arrive, is gone once the server sees the cut.
    func testUploadCutOffMidBodyLeavesNoStagedFile() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let connection = try RawHTTPConnection(url: db)
        try connection.sendHead("PUT", "/db/doc/film.mp4", headers: [("Content-Type", "video/mp4"), ("Transfer-Encoding", "chunked")])
        try connection.writeChunk([UInt8](repeating: 3, count: 256 << 10))
        try await waitUntil("the upload is being staged") { files(server).staging.count == 1 }
        connection.close()
        try await waitUntil("the cut upload's staged file is removed") { files(server).staging.isEmpty }
        XCTAssertEqual(files(server).stored, [])
        try await assertEqual(try await HTTP.json(.GET, db + "/doc").status, 404)
        // The database takes the next upload as usual.
        let next = try await HTTP.request(.PUT, db + "/doc/film.mp4", body: Array("short".utf8), headers: [("Content-Type", "video/mp4")])
        XCTAssertEqual(next.status, 201, next.text)
        try await assertEqual(try await HTTP.request(.GET, db + "/doc/film.mp4").body, Array("short".utf8))
    }
}

private extension JSON.Object {
    func merging(_ other: JSON.Object) -> JSON.Object {
        var merged = self
        for (key, value) in other { merged[key] = value }
        return merged
    }
}

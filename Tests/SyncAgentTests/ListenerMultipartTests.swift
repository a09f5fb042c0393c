import AsyncHTTPClient
import Crypto
import Foundation
import JSON
import NIOCore
import Store
@testable import SyncAgent
import XCTest

/// Attachments: `multipart/related` uploads, `multipart/mixed` open_revs
/// answers, standalone attachment requests, and the multipart reader itself.
final class ListenerMultipartTests: XCTestCase {
    /// Deterministic binary content of `count` bytes, every byte value included.
    private func binary(_ count: Int, seed: UInt64 = 42) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }

    private func related(_ document: JSON, attachments: [(name: String, type: String, bytes: [UInt8])], boundary: String) -> [UInt8] {
        var body = Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8) + document.serializedBytes()
        for attachment in attachments {
            body += Array("\r\n--\(boundary)\r\nContent-Disposition: attachment; filename=\"\(attachment.name)\"\r\nContent-Type: \(attachment.type)\r\nContent-Length: \(attachment.bytes.count)\r\n\r\n".utf8)
            body += attachment.bytes
        }
        body += Array("\r\n--\(boundary)--".utf8)
        return body
    }

    private func md5(_ bytes: [UInt8]) -> String { "md5-" + Data(Insecure.MD5.hash(data: bytes)).base64EncodedString() }

    func testMultipartRoundTripOfALargeBinaryAttachment() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        let content = binary(5_000_000)
        // The boundary text appears inside the content's neighbourhood to make the reader work for it.
        let small = Array("--b0undary is not the boundary\r\n--b0undar".utf8)
        let document: JSON = [
            "_id": "photo", "title": "big",
            "_attachments": [
                "image.bin": ["follows": true, "content_type": "application/octet-stream", "length": .number(Double(content.count)), "digest": .string(md5(content))],
                "note.txt": ["follows": true, "content_type": "text/plain", "length": .number(Double(small.count))],
            ],
        ]
        let boundary = "b0undary"
        let body = related(document, attachments: [("image.bin", "application/octet-stream", content), ("note.txt", "text/plain", small)], boundary: boundary)
        let put = try await HTTP.request(.PUT, server.url + "/db/photo", body: body,
                                         headers: [("Content-Type", "multipart/related; boundary=\"\(boundary)\"")])
        XCTAssertEqual(put.status, 201, put.text)
        let rev = try XCTUnwrap(put.json["rev"]?.stringValue)

        let stub = try await HTTP.json(.GET, server.url + "/db/photo")
        XCTAssertEqual(stub.json["_attachments"]?["image.bin"]?["stub"], true)
        XCTAssertEqual(stub.json["_attachments"]?["image.bin"]?["length"]?.intValue, content.count)
        XCTAssertEqual(stub.json["_attachments"]?["image.bin"]?["digest"]?.stringValue, md5(content))

        let raw = try await HTTP.request(.GET, server.url + "/db/photo/image.bin")
        XCTAssertEqual(raw.status, 200)
        XCTAssertEqual(raw.header("Content-Type"), "application/octet-stream")
        XCTAssertTrue(raw.body == content, "attachment content differs")
        try await assertEqual(try await HTTP.request(.GET, server.url + "/db/photo/note.txt").body, small)

        // open_revs as multipart/mixed, the way CouchDB's replicator asks for it.
        let query = "open_revs=" + "[\"\(rev)\"]".addingPercentEncoding(withAllowedCharacters: .alphanumerics)! + "&revs=true&latest=true&attachments=true"
        let mixed = try await HTTP.request(.GET, server.url + "/db/photo?" + query, headers: [("Accept", "multipart/mixed")])
        XCTAssertEqual(mixed.status, 200)
        let outerType = MediaType(parsing: try XCTUnwrap(mixed.header("Content-Type")))
        XCTAssertEqual(outerType.type, "multipart/mixed")
        let outer = MultipartReader(boundary: try XCTUnwrap(outerType.boundary), body: chunks(mixed.body, size: 7919))
        let part = try await outer.nextPart()
        let innerType = MediaType(parsing: try XCTUnwrap(part?["content-type"]))
        XCTAssertEqual(innerType.type, "multipart/related")
        let innerBody = try await outer.readBody(limit: 100 << 20)
        let inner = MultipartReader(boundary: try XCTUnwrap(innerType.boundary), body: chunks(innerBody, size: 65536))
        try await assertEqual(try await inner.nextPart()?.contentType, "application/json")
        let json = try JSON(parsing: try await inner.readBody(limit: 1 << 20))
        XCTAssertEqual(json["_rev"]?.stringValue, rev)
        XCTAssertEqual(json["_revisions"]?["start"], 1)
        XCTAssertEqual(json["_attachments"]?["image.bin"]?["follows"], true)
        var received: [String: [UInt8]] = [:]
        while let headers = try await inner.nextPart() {
            received[try XCTUnwrap(headers.filename)] = try await inner.readBody(limit: 100 << 20)
        }
        XCTAssertTrue(received["image.bin"] == content, "multipart attachment content differs")
        XCTAssertEqual(received["note.txt"], small)
        try await assertNil(try await outer.nextPart())

        // The same revision written elsewhere with new_edits=false from that multipart answer.
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/copy").status, 201)
        let copy = try await HTTP.request(.PUT, server.url + "/copy/photo?new_edits=false", body: innerBody,
                                          headers: [("Content-Type", innerType.type + "; boundary=\"\(innerType.boundary!)\"")])
        XCTAssertEqual(copy.status, 201, copy.text)
        try await assertEqual(try await HTTP.json(.GET, server.url + "/copy/photo").json["_rev"]?.stringValue, rev)
        try await assertTrue(try await HTTP.request(.GET, server.url + "/copy/photo/image.bin").body == content)

        // Inline base64 with attachments=true, and atts_since leaving known attachments as stubs.
        let inline = try await HTTP.json(.GET, server.url + "/db/photo?attachments=true")
        XCTAssertEqual(inline.json["_attachments"]?["note.txt"]?["data"]?.stringValue, Data(small).base64EncodedString())
        let since = try await HTTP.json(.GET, server.url + "/db/photo?attachments=true&atts_since=" + "[\"\(rev)\"]".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        XCTAssertEqual(since.json["_attachments"]?["note.txt"]?["stub"], true)
    }

    func testStandaloneAttachmentRequests() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        let created = try await HTTP.request(.PUT, server.url + "/db/doc/hello.txt", body: Array("hello".utf8), headers: [("Content-Type", "text/plain")])
        XCTAssertEqual(created.status, 201, created.text)
        let rev1 = try XCTUnwrap(created.json["rev"]?.stringValue)
        let read = try await HTTP.request(.GET, server.url + "/db/doc/hello.txt")
        XCTAssertEqual(read.text, "hello")
        XCTAssertEqual(read.header("Content-Type"), "text/plain")
        XCTAssertNotNil(read.header("ETag"))
        let head = try await HTTP.request(.HEAD, server.url + "/db/doc/hello.txt")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("Content-Length"), "5")

        try await assertEqual(try await HTTP.request(.PUT, server.url + "/db/doc/other.bin", body: [1, 2, 3]).status, 409)
        let second = try await HTTP.request(.PUT, server.url + "/db/doc/other.bin?rev=" + rev1, body: [1, 2, 3],
                                            headers: [("Content-Type", "application/octet-stream")])
        XCTAssertEqual(second.status, 201)
        let rev2 = try XCTUnwrap(second.json["rev"]?.stringValue)
        let doc = try await HTTP.json(.GET, server.url + "/db/doc")
        XCTAssertEqual(doc.json["_attachments"]?.objectValue?.keys.sorted(), ["hello.txt", "other.bin"])

        let removed = try await HTTP.json(.DELETE, server.url + "/db/doc/hello.txt?rev=" + rev2)
        XCTAssertEqual(removed.status, 200)
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db/doc/hello.txt").status, 404)
        try await assertEqual(try await HTTP.request(.GET, server.url + "/db/doc/other.bin").body, [1, 2, 3])
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db/doc/nothing").status, 404)
    }

    func testMalformedMultipartIsRefusedAndWritesNothing() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        let type = [("Content-Type", "multipart/related; boundary=\"abc\"")]
        let cut = Array("--abc\r\nContent-Type: application/json\r\n\r\n{\"_attachments\":{\"a\":{\"follows\":true}}}\r\n--abc\r\n\r\nhalf".utf8)
        let truncated = try await HTTP.request(.PUT, server.url + "/db/doc", body: cut, headers: type)
        XCTAssertEqual(truncated.status, 400)
        XCTAssertEqual(truncated.json["error"], "bad_request")
        let noBoundary = try await HTTP.request(.PUT, server.url + "/db/doc", body: cut, headers: [("Content-Type", "multipart/related")])
        XCTAssertEqual(noBoundary.status, 400)
        let notJSON = try await HTTP.request(.PUT, server.url + "/db/doc", body: Array("--abc\r\n\r\nnope\r\n--abc--".utf8), headers: type)
        XCTAssertEqual(notJSON.status, 400)
        let missingPart = Array("--abc\r\nContent-Type: application/json\r\n\r\n{\"_attachments\":{\"a\":{\"follows\":true}}}\r\n--abc--".utf8)
        try await assertEqual(try await HTTP.request(.PUT, server.url + "/db/doc", body: missingPart, headers: type).status, 400)
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db").json["doc_count"], 0)
    }

    func testOpenRevisionsMultipartMarksMissingRevisions() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        let rev = try await HTTP.json(.PUT, server.url + "/db/a", ["x": 1]).json["rev"]!.stringValue!
        let revs = "[\"\(rev)\",\"5-nothere\"]".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let answer = try await HTTP.request(.GET, server.url + "/db/a?open_revs=" + revs, headers: [("Accept", "multipart/mixed")])
        let type = MediaType(parsing: try XCTUnwrap(answer.header("Content-Type")))
        let reader = MultipartReader(boundary: try XCTUnwrap(type.boundary), body: chunks(answer.body, size: 3))
        try await assertEqual(try await reader.nextPart()?.contentType, "application/json")
        try await assertEqual(try JSON(parsing: try await reader.readBody(limit: 1 << 20))["x"], 1)
        let missing = try await reader.nextPart()
        XCTAssertEqual(missing?["content-type"], "application/json; error=\"true\"")
        try await assertEqual(try JSON(parsing: try await reader.readBody(limit: 1 << 20))["missing"], "5-nothere")
        try await assertNil(try await reader.nextPart())
    }

    func testReaderHandlesEveryChunking() async throws {
        let body = Array("preamble\r\n--xyz\r\nContent-Type: text/plain\r\n\r\nfirst\r\n--xy\r\n--xyz\r\n\r\n\r\n--xyz--\r\nepilogue".utf8)
        for size in 1...9 {
            let reader = MultipartReader(boundary: "xyz", body: chunks(body, size: size))
            try await assertEqual(try await reader.nextPart()?.contentType, "text/plain")
            try await assertEqual(String(decoding: try await reader.readBody(limit: 100), as: UTF8.self), "first\r\n--xy")
            try await assertEqual(try await reader.nextPart()?.fields.count, 0)
            try await assertEqual(try await reader.readBody(limit: 100), [])
            try await assertNil(try await reader.nextPart())
        }
        let truncated = MultipartReader(boundary: "xyz", body: chunks(Array("--xyz\r\n\r\nabc".utf8), size: 4))
        _ = try await truncated.nextPart()
        do {
            _ = try await truncated.readBody(limit: 100)
            XCTFail("a body cut short must fail")
        } catch {
            XCTAssertEqual((error as? MultipartError)?.description, "malformed multipart body: body ended inside a part", "\(error)")
        }
        let big = MultipartReader(boundary: "xyz", body: chunks(Array("--xyz\r\n\r\n0123456789\r\n--xyz--".utf8), size: 4))
        _ = try await big.nextPart()
        do {
            _ = try await big.readBody(limit: 5)
            XCTFail("a part over the limit must fail")
        } catch {
            XCTAssertEqual((error as? MultipartError)?.description, "multipart part too large", "\(error)")
        }
    }

    /// A document part over the request size limit gets CouchDB's 413 answer, and nothing is written.
    func testDocumentPartOverTheLimitIs413() async throws {
        let server = try await startListener { $0.maximumRequestSize = 1000 }
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        let document: JSON = ["_id": "big", "filler": .string(String(repeating: "x", count: 2000))]
        let answer = try await HTTP.request(.PUT, server.url + "/db/big", body: related(document, attachments: [], boundary: "abc"),
                                            headers: [("Content-Type", "multipart/related; boundary=\"abc\"")])
        XCTAssertEqual(answer.status, 413, answer.text)
        XCTAssertEqual(answer.json, ["error": "too_large", "reason": "the request entity is too large"], answer.text)
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db").json["doc_count"], 0)
    }

    private func chunks(_ bytes: [UInt8], size: Int) -> AsyncStream<ByteBuffer> {
        AsyncStream { continuation in
            var offset = 0
            while offset < bytes.count {
                continuation.yield(ByteBuffer(bytes: bytes[offset..<min(bytes.count, offset + size)]))
                offset += size
            }
            continuation.finish()
        }
    }
}

import AsyncHTTPClient
import Crypto
import Foundation
import JSON
import NIOCore
import Store
@testable import SyncAgent
import XCTest

/// The requests independent CouchDB-protocol implementations send, each
/// answered as Apache CouchDB documents (and, where the reference is terse,
/// as its source does). Each test names the API reference section it checks.
final class CouchDBFidelityTests: XCTestCase {
    private func database(_ server: TestListener) async throws -> String {
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        return server.url + "/db"
    }

    private func encoded(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }

    private func md5(_ bytes: [UInt8]) -> String { "md5-" + Data(Insecure.MD5.hash(data: bytes)).base64EncodedString() }

    private func chunks(_ bytes: [UInt8]) -> AsyncStream<ByteBuffer> {
        AsyncStream { continuation in
            continuation.yield(ByteBuffer(bytes: bytes))
            continuation.finish()
        }
    }

    /// A document with one attachment, written through the HTTP API.
    private func documentWithAttachment(_ db: String, id: String, content: [UInt8]) async throws -> String {
        let put = try await HTTP.json(.PUT, db + "/" + id, ["title": "t", "_attachments": [
            "a.bin": ["content_type": "application/octet-stream", "data": .string(Data(content).base64EncodedString())],
        ]])
        XCTAssertEqual(put.status, 201)
        return try XCTUnwrap(put.json["rev"]?.stringValue)
    }

    /// The parts of an `open_revs` `multipart/mixed` answer: each revision's JSON and its attachments that follow.
    private func openRevisionParts(_ answer: HTTPAnswer) async throws -> [(json: JSON, attachments: [String: [UInt8]])] {
        let outerType = MediaType(parsing: try XCTUnwrap(answer.header("Content-Type")))
        XCTAssertEqual(outerType.type, "multipart/mixed")
        let outer = MultipartReader(boundary: try XCTUnwrap(outerType.boundary), body: chunks(answer.body))
        var parts: [(JSON, [String: [UInt8]])] = []
        while let headers = try await outer.nextPart() {
            let type = MediaType(parsing: try XCTUnwrap(headers["content-type"]))
            let body = try await outer.readBody(limit: 1 << 24)
            guard type.type == "multipart/related" else {
                parts.append((try JSON(parsing: body), [:]))
                continue
            }
            let inner = MultipartReader(boundary: try XCTUnwrap(type.boundary), body: chunks(body))
            _ = try await inner.nextPart()
            let json = try JSON(parsing: try await inner.readBody(limit: 1 << 24))
            var attachments: [String: [UInt8]] = [:]
            while let part = try await inner.nextPart() {
                attachments[try XCTUnwrap(part.filename)] = try await inner.readBody(limit: 1 << 24)
            }
            parts.append((json, attachments))
        }
        return parts
    }

    // MARK: GET /{db}/{docid}: open_revs and atts_since

    /// What a CouchDB 3.5 replicator sends for a document its target has no
    /// revision of: `open_revs` as `multipart/mixed`, neither `attachments` nor
    /// `atts_since`. CouchDB answers with every attachment following the JSON
    /// (`"follows": true`), never stubs the target cannot resolve.
    func testOpenRevisionsMultipartWithoutAttachmentsParameterCarriesTheAttachments() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let content: [UInt8] = Array(0..<200).map { UInt8($0) }
        let rev = try await documentWithAttachment(db, id: "doc", content: content)

        let query = "revs=true&open_revs=" + encoded("[\"\(rev)\"]") + "&latest=true"
        let answer = try await HTTP.request(.GET, db + "/doc?" + query, headers: [("Accept", "multipart/mixed")])
        XCTAssertEqual(answer.status, 200)
        let parts = try await openRevisionParts(answer)
        XCTAssertEqual(parts.count, 1)
        let attachment = parts[0].json["_attachments"]?["a.bin"]
        XCTAssertEqual(attachment?["follows"], true)
        XCTAssertNil(attachment?["stub"])
        XCTAssertEqual(attachment?["length"]?.intValue, content.count)
        XCTAssertEqual(attachment?["digest"]?.stringValue, md5(content))
        XCTAssertEqual(parts[0].attachments["a.bin"], content)

        // With atts_since naming the revision itself the requester has every attachment: stubs are right.
        let since = query + "&atts_since=" + encoded("[\"\(rev)\"]")
        let known = try await openRevisionParts(try await HTTP.request(.GET, db + "/doc?" + since, headers: [("Accept", "multipart/mixed")]))
        XCTAssertEqual(known.first?.json["_attachments"]?["a.bin"]?["stub"], true)
        XCTAssertEqual(known.first?.attachments.isEmpty, true)

        // JSON open_revs keep following `attachments`: stubs without it.
        let json = try await HTTP.json(.GET, db + "/doc?" + query)
        XCTAssertEqual(json.json.arrayValue?.first?["ok"]?["_attachments"]?["a.bin"]?["stub"], true)
    }

    // MARK: POST /{db}/_bulk_get

    /// `_bulk_get?attachments=false` with `"atts_since": []` (a target with no
    /// ancestor) answers stubs, as CouchDB does: only `attachments=true` or a
    /// non-empty `atts_since` brings content.
    func testBulkGetWithoutAttachmentsAnswersStubs() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let first = try await documentWithAttachment(db, id: "doc", content: [1, 2, 3])
        let second = try await HTTP.json(.PUT, db + "/doc", ["_rev": .string(first), "title": "u", "_attachments": [
            "a.bin": ["stub": true],
            "b.bin": ["content_type": "application/octet-stream", "data": .string(Data([4, 5]).base64EncodedString())],
        ]]).json["rev"]!

        let url = db + "/_bulk_get?latest=true&revs=true&attachments=false"
        let stubs = try await HTTP.json(.POST, url, ["docs": [["id": "doc", "rev": second, "atts_since": []], ["id": "doc", "rev": second]]])
        XCTAssertEqual(stubs.status, 200)
        for result in stubs.json["results"]?.arrayValue ?? [] {
            let attachments = result["docs"]?.arrayValue?.first?["ok"]?["_attachments"]
            XCTAssertEqual(attachments?["a.bin"]?["stub"], true)
            XCTAssertEqual(attachments?["b.bin"]?["stub"], true)
            XCTAssertNil(attachments?["a.bin"]?["data"])
        }
        XCTAssertEqual(stubs.json["results"]?.arrayValue?.count, 2)

        // A non-empty atts_since brings what changed after it; attachments=true brings everything.
        let since = try await HTTP.json(.POST, url, ["docs": [["id": "doc", "rev": second, "atts_since": [.string(first)]]]])
        let sinceAttachments = since.json["results"]?.arrayValue?.first?["docs"]?.arrayValue?.first?["ok"]?["_attachments"]
        XCTAssertEqual(sinceAttachments?["a.bin"]?["stub"], true)
        XCTAssertEqual(sinceAttachments?["b.bin"]?["data"]?.stringValue, Data([4, 5]).base64EncodedString())
        let all = try await HTTP.json(.POST, db + "/_bulk_get?attachments=true", ["docs": [["id": "doc", "rev": second]]])
        XCTAssertEqual(all.json["results"]?.arrayValue?.first?["docs"]?.arrayValue?.first?["ok"]?["_attachments"]?["a.bin"]?["data"]?.stringValue,
                       Data([1, 2, 3]).base64EncodedString())

        // CouchDB refuses the per-document parameters in the query string.
        let refused = try await HTTP.json(.POST, db + "/_bulk_get?atts_since=%5B%5D", ["docs": []])
        XCTAssertEqual(refused.status, 400)
        XCTAssertEqual(refused.json["reason"], "\"atts_since\" query parameter is not acceptable")
    }

    // MARK: Attachments kept gzip-encoded

    /// A `multipart/related` body of `document` and the given parts, as CouchDB's replicator writes it.
    private func related(_ document: JSON, parts: [(name: String, bytes: [UInt8])], boundary: String = "abc123") -> [UInt8] {
        var body = Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8) + document.serializedBytes()
        for part in parts {
            body += Array("\r\n--\(boundary)\r\nContent-Disposition: attachment; filename=\"\(part.name)\"\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nContent-Length: \(part.bytes.count)\r\n\r\n".utf8)
            body += part.bytes
        }
        return body + Array("\r\n--\(boundary)--".utf8)
    }

    /// What a CouchDB replicator pushes for a compressible attachment: a
    /// `new_edits=false` multipart PUT whose part is gzip, marked `"encoding":
    /// "gzip"` with `length` the decoded length. syncd keeps the real content,
    /// length and digest as CouchDB does, and never serves gzip bytes as the content.
    func testGzipEncodedAttachmentFromACouchDBReplicatorKeepsItsContent() async throws {
        // A client that takes no encoding (the shared client asks for gzip and inflates it).
        let raw = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(decompression: .disabled))
        do {
            try await gzipEncodedAttachment(client: raw)
        } catch {
            try await raw.shutdown()
            throw error
        }
        try await raw.shutdown()
    }

    private func gzipEncodedAttachment(client raw: HTTPClient) async throws {
        let server = try await startListener()
        let db = try await database(server)
        let content = Array(String(repeating: "the quick brown fox jumps over the lazy dog\n", count: 400).utf8)
        let compressed = try systemGzip(content)
        XCTAssertLessThan(compressed.count, content.count / 4)
        func document(_ id: String, part: [UInt8], length: Int) -> JSON {
            [
                "_id": .string(id), "_rev": "1-0123456789abcdef0123456789abcdef",
                "_revisions": ["start": 1, "ids": ["0123456789abcdef0123456789abcdef"]],
                "_attachments": ["note.txt": [
                    "content_type": "text/plain", "revpos": 1, "digest": .string(md5(part)),
                    "length": .number(Double(length)), "follows": true,
                    "encoding": "gzip", "encoded_length": .number(Double(part.count)),
                ]],
            ]
        }
        let type = [("Content-Type", "multipart/related; boundary=\"abc123\"")]
        let put = try await HTTP.request(.PUT, db + "/doc?new_edits=false", body: related(document("doc", part: compressed, length: content.count), parts: [("note.txt", compressed)]), headers: type)
        XCTAssertEqual(put.status, 201, put.text)

        let stub = try await HTTP.json(.GET, db + "/doc").json["_attachments"]?["note.txt"]
        XCTAssertEqual(stub?["length"]?.intValue, content.count)
        XCTAssertEqual(stub?["digest"]?.stringValue, md5(compressed))
        XCTAssertNil(stub?["encoding"])
        let info = try await HTTP.json(.GET, db + "/doc?att_encoding_info=true").json["_attachments"]?["note.txt"]
        XCTAssertEqual(info?["encoding"], "gzip")
        XCTAssertEqual(info?["encoded_length"]?.intValue, compressed.count)

        let plain = try await HTTP.request(.GET, db + "/doc/note.txt", client: raw)
        XCTAssertEqual(plain.status, 200)
        XCTAssertTrue(plain.body == content, "the attachment must be served decoded")
        XCTAssertEqual(plain.header("Content-Length"), String(content.count))
        XCTAssertNil(plain.header("Content-Encoding"))
        let asStored = try await HTTP.request(.GET, db + "/doc/note.txt", headers: [("Accept-Encoding", "gzip")], client: raw)
        XCTAssertEqual(asStored.header("Content-Encoding"), "gzip")
        XCTAssertTrue(asStored.body == compressed)
        // CouchDB serves no range of an encoded attachment: it says so, and a Range gets the whole.
        XCTAssertEqual(plain.header("Accept-Ranges"), "none")
        for accept in [[], [("Accept-Encoding", "gzip")]] {
            let ranged = try await HTTP.request(.GET, db + "/doc/note.txt", headers: accept + [("Range", "bytes=0-9")], client: raw)
            XCTAssertEqual(ranged.status, 200)
            XCTAssertNil(ranged.header("Content-Range"))
            XCTAssertTrue(ranged.body == (accept.isEmpty ? content : compressed))
        }
        let inline = try await HTTP.json(.GET, db + "/doc?attachments=true").json["_attachments"]?["note.txt"]?["data"]?.stringValue
        XCTAssertTrue(inline == Data(content).base64EncodedString(), "inline data must be the decoded content")
        // CouchDB's reference: `length` is "not available if attachment content requested".
        try await assertNil(try await HTTP.json(.GET, db + "/doc?attachments=true").json["_attachments"]?["note.txt"]?["length"])

        // open_revs as CouchDB answers it: the gzip bytes follow, marked with their encoding.
        let query = "revs=true&latest=true&open_revs=" + encoded("[\"1-0123456789abcdef0123456789abcdef\"]")
        let mixed = try await HTTP.request(.GET, db + "/doc?" + query, headers: [("Accept", "multipart/mixed")])
        let parts = try await openRevisionParts(mixed)
        let entry = parts.first?.json["_attachments"]?["note.txt"]
        XCTAssertEqual(entry?["follows"], true)
        XCTAssertEqual(entry?["encoding"], "gzip")
        XCTAssertEqual(entry?["length"]?.intValue, content.count)
        XCTAssertEqual(entry?["encoded_length"]?.intValue, compressed.count)
        XCTAssertTrue(parts.first?.attachments["note.txt"] == compressed)

        // Replicated on to another database by syncd's own replicator: the content arrives, not the gzip.
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/copy").status, 201)
        let catalog = server.catalog
        _ = await Replicator(ReplicationConfiguration(source: LocalEndpoint(try catalog.database("db")),
                                                      target: LocalEndpoint(try catalog.database("copy")))).run()
        try await assertTrue(try await HTTP.request(.GET, server.url + "/copy/doc/note.txt", client: raw).body == content)

        // Pulled by syncd's replicator from a source without _bulk_get: open_revs as
        // multipart/mixed, the gzip part decoded on the way in.
        let remote = try RemoteEndpoint(url: db)
        remote.bulkGetSupported.withLock { $0 = false }
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/pulled").status, 201)
        let pulled = await Replicator(ReplicationConfiguration(source: remote, target: LocalEndpoint(try catalog.database("pulled")))).run()
        await remote.shutdown()
        XCTAssertNil(pulled.lastError)
        XCTAssertEqual(pulled.docsWritten, 1)
        try await assertTrue(try await HTTP.request(.GET, server.url + "/pulled/doc/note.txt", client: raw).body == content)

        // Bytes that are not the gzip of `length` bytes are refused, and nothing is written.
        for (bytes, length) in [(content, content.count), (compressed, content.count + 1), (Array(compressed.dropLast(9)), content.count)] {
            let bad = document("bad", part: bytes, length: length)
            let refused = try await HTTP.request(.PUT, db + "/bad?new_edits=false", body: related(bad, parts: [("note.txt", bytes)]), headers: type)
            XCTAssertEqual(refused.status, 400, refused.text)
        }
        try await assertEqual(try await HTTP.json(.GET, db + "/bad").status, 404)
        // A decoded length beyond the attachment limit is refused before any decoding.
        let huge = document("bad", part: compressed, length: 1 << 40)
        let tooLarge = try await HTTP.request(.PUT, db + "/bad?new_edits=false", body: related(huge, parts: [("note.txt", compressed)]), headers: type)
        XCTAssertEqual(tooLarge.status, 413, tooLarge.text)
    }

    // MARK: PUT /{db}/{docid}

    /// CouchDB reads a document `PUT` as JSON whatever `Content-Type` says
    /// (curl `-d` sends `application/x-www-form-urlencoded`).
    func testDocumentPutAcceptsJSONUnderAnyContentType() async throws {
        let server = try await startListener()
        let db = try await database(server)
        for (id, type) in [("plain", "text/plain"), ("form", "application/x-www-form-urlencoded")] {
            let put = try await HTTP.request(.PUT, db + "/" + id, body: Array(#"{"n":1}"#.utf8), headers: [("Content-Type", type)])
            XCTAssertEqual(put.status, 201, put.text)
            XCTAssertEqual(put.json["ok"], true)
            try await assertEqual(try await HTTP.json(.GET, db + "/" + id).json["n"], 1)
        }
        let local = try await HTTP.request(.PUT, db + "/_local/cp", body: Array(#"{"n":2}"#.utf8),
                                           headers: [("Content-Type", "application/x-www-form-urlencoded")])
        XCTAssertEqual(local.status, 201, local.text)
        let notJSON = try await HTTP.request(.PUT, db + "/bad", body: Array("n=1".utf8), headers: [("Content-Type", "application/x-www-form-urlencoded")])
        XCTAssertEqual(notJSON.status, 400)
        XCTAssertEqual(notJSON.json["error"], "bad_request")
    }

    // MARK: POST /{db}/_purge

    /// `_purge` removes leaves as if they had never been, answers CouchDB's
    /// `{"purge_seq": null, "purged": {...}}`, counts in the database's
    /// `purge_seq`, and keeps `_purge_infos_limit`; administrators only.
    func testPurge() async throws {
        let server = try await startListener(users: ["alice": "pw"])
        let db = try await database(server)
        let first = try await HTTP.json(.PUT, db + "/a", ["n": 1]).json["rev"]!.stringValue!
        let second = try await HTTP.json(.PUT, db + "/a", ["_rev": .string(first), "n": 2]).json["rev"]!.stringValue!
        _ = try await HTTP.json(.PUT, db + "/b", ["n": 3])
        try await assertEqual(try await HTTP.json(.GET, db).json["purge_seq"], 0)

        let purged = try await HTTP.json(.POST, db + "/_purge", ["a": [.string(second), .string(first), "9-nothere"], "zz": ["1-abc"]])
        XCTAssertEqual(purged.status, 201)
        XCTAssertEqual(purged.json["purge_seq"], .null)
        XCTAssertEqual(purged.json["purged"]?["a"], [.string(second)])
        XCTAssertEqual(purged.json["purged"]?["zz"], [])
        try await assertEqual(try await HTTP.json(.GET, db + "/a").status, 404)
        let info = try await HTTP.json(.GET, db).json
        XCTAssertEqual(info["doc_count"], 1)
        XCTAssertEqual(info["purge_seq"], 2)

        try await assertEqual(try await HTTP.json(.POST, db + "/_purge", ["b": "1-x"]).status, 400)
        let many = JSON.object(JSON.Object((0...100).map { (key: "d\($0)", value: JSON.array(["1-a"])) }))
        let tooMany = try await HTTP.json(.POST, db + "/_purge", many)
        XCTAssertEqual(tooMany.status, 400)
        XCTAssertEqual(tooMany.json["reason"], "Exceeded maximum number of documents.")
        try await assertEqual(try await HTTP.json(.GET, db + "/_purge").status, 405)

        try await assertEqual(try await HTTP.json(.GET, db + "/_purge_infos_limit").json, 1000)
        try await assertEqual(try await HTTP.json(.PUT, db + "/_purge_infos_limit", 2000).json["ok"], true)
        try await assertEqual(try await HTTP.json(.GET, db + "/_purge_infos_limit").json, 2000)
        try await assertEqual(try await HTTP.json(.PUT, db + "/_purge_infos_limit", -1).status, 400)

        // Server administrators only: anonymous clients get 401, other users 403.
        try await assertEqual(try await HTTP.json(.POST, server.anonymousURL + "/db/_purge", ["b": ["1-x"]]).status, 401)
        let user = try await HTTP.json(.POST, server.anonymousURL + "/db/_purge", ["b": ["1-x"]], headers: [HTTP.basic("alice", "pw")])
        XCTAssertEqual(user.status, 403)
        try await assertEqual(try await HTTP.json(.PUT, server.anonymousURL + "/db/_purge_infos_limit", 5, headers: [HTTP.basic("alice", "pw")]).status, 403)
    }

    // MARK: Numbers

    /// Integers a double cannot hold come back with every digit, as CouchDB
    /// keeps them; the same body gives the same revision id everywhere.
    func testIntegersBeyondDoublePrecisionStayExact() async throws {
        let server = try await startListener()
        let db = try await database(server)
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/other").status, 201)
        let body = #"{"big":1234567890123456789012345678901234567890,"edge":9007199254740993,"negative":-98765432109876543210,"small":9007199254740992,"list":[18446744073709551616]}"#
        let first = try await HTTP.request(.PUT, db + "/n", body: Array(body.utf8), headers: [("Content-Type", "application/json")])
        XCTAssertEqual(first.status, 201, first.text)
        let second = try await HTTP.request(.PUT, server.url + "/other/n", body: Array(body.utf8), headers: [("Content-Type", "application/json")])
        XCTAssertEqual(first.json["rev"], second.json["rev"])
        for text in [try await HTTP.request(.GET, db + "/n").text,
                     try await HTTP.request(.GET, db + "/_all_docs?include_docs=true").text,
                     try await HTTP.request(.GET, db + "/_changes?include_docs=true").text] {
            for digits in ["1234567890123456789012345678901234567890", "9007199254740993", "-98765432109876543210",
                           "9007199254740992", "[18446744073709551616]"] {
                XCTAssertTrue(text.contains(digits), "\(digits) missing from \(text)")
            }
        }
        // Selectors still compare them as numbers.
        let found = try await HTTP.json(.POST, db + "/_changes?filter=_selector", ["selector": ["big": ["$gt": 1e39]]])
        XCTAssertEqual(found.json["results"]?.arrayValue?.count, 1)
    }

    // MARK: GET /

    /// The welcome claims only features syncd has (none of CouchDB's optional
    /// ones) and a CouchDB 3 version.
    func testWelcomeClaimsNoFeatureItLacks() async throws {
        let server = try await startListener()
        let welcome = try await HTTP.json(.GET, server.url + "/").json
        XCTAssertEqual(welcome["features"], [])
        XCTAssertEqual(welcome["version"], "3.5.0")
    }

    // MARK: GET /{db}/_changes

    /// A `since` the database never issued is refused with CouchDB 3.5's 400,
    /// so no client saves it as a checkpoint and skips changes.
    func testChangesSinceBeyondUpdateSequenceIsRefused() async throws {
        let server = try await startListener()
        let db = try await database(server)
        _ = try await HTTP.json(.PUT, db + "/a", ["n": 1])
        _ = try await HTTP.json(.PUT, db + "/b", ["n": 2])
        for since in ["3", "1000", "\"1000\"", "1000-opaque"] {
            let answer = try await HTTP.json(.GET, db + "/_changes?since=" + encoded(since))
            XCTAssertEqual(answer.status, 400, since)
            XCTAssertEqual(answer.json["error"], "bad_request")
            XCTAssertEqual(answer.json["reason"], "Malformed sequence supplied in 'since' parameter.")
        }
        let longpoll = try await HTTP.json(.GET, db + "/_changes?feed=longpoll&since=99")
        XCTAssertEqual(longpoll.status, 400)
        let current = try await HTTP.json(.GET, db + "/_changes?since=2")
        XCTAssertEqual(current.status, 200)
        XCTAssertEqual(current.json["last_seq"]?.intValue, 2)
        XCTAssertEqual(current.json["results"], [])
        try await assertEqual(try await HTTP.json(.GET, db + "/_changes?since=now").status, 200)
    }

    // MARK: POST /{db}/_bulk_docs

    /// `_design/` and `_local/` alone are not document ids (CouchDB's `validate_docid`).
    func testBulkDocsRefusesAnEmptyDesignDocumentName() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let answer = try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": [["_id": "_design/"], ["_id": "_design/ok"]]])
        XCTAssertEqual(answer.status, 201)
        XCTAssertEqual(answer.json.element(0)?["error"], "illegal_docid")
        XCTAssertEqual(answer.json.element(0)?["reason"], "Illegal document id `_design/`")
        XCTAssertEqual(answer.json.element(1)?["ok"], true)
        let replicated = try await HTTP.json(.POST, db + "/_bulk_docs", ["new_edits": false, "docs": [["_id": "_design/", "_rev": "1-abc"]]])
        XCTAssertEqual(replicated.json.arrayValue?.first?["error"], "illegal_docid")
        try await assertEqual(try await HTTP.json(.GET, db).json["doc_count"], 1)
    }
}

extension JSON {
    /// Element `index` of an array; `nil` when out of range or not an array.
    func element(_ index: Int) -> JSON? {
        guard let items = arrayValue, items.indices.contains(index) else { return nil }
        return items[index]
    }
}

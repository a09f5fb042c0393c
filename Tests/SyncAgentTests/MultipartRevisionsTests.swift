import Crypto
import Foundation
import JSON
import Locking
import NIOCore
import Store
@testable import SyncAgent
import XCTest

/// Attachments travel as binary parts streamed to and from files: the listener
/// answers `_bulk_get` as CouchDB's `multipart/mixed` when asked for it, the
/// replicator asks for it and stages each part in the target's store as it
/// arrives, and pushes send their files as `multipart/related`. Nothing holds
/// an attachment whole in memory, and a cut answer leaves nothing behind.
final class MultipartRevisionsTests: XCTestCase {
    /// The parts of a multipart body, each with its headers and whole body.
    private func parts(of body: [UInt8], boundary: String) async throws -> [(headers: MultipartHeaders, body: [UInt8])] {
        let stream = AsyncStream<ByteBuffer> { continuation in
            continuation.yield(ByteBuffer(bytes: body))
            continuation.finish()
        }
        let reader = MultipartReader(boundary: boundary, body: stream)
        var parts: [(MultipartHeaders, [UInt8])] = []
        while let headers = try await reader.nextPart() { parts.append((headers, try await reader.readBody(limit: 1 << 30))) }
        return parts
    }

    func testBulkGetAnswersCouchDBsMultipartWhenAskedForIt() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db/plain", ["n": 1]).status, 201)
        let content = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let put = try await HTTP.request(.PUT, server.url + "/db/photo/a.bin", body: content, headers: [("Content-Type", "image/x-test")])
        XCTAssertEqual(put.status, 201, put.text)
        let photoRev = try XCTUnwrap(try JSON(parsing: put.body)["rev"]?.stringValue)
        let request = JSON.object(["docs": [["id": "plain"], ["id": "photo", "rev": .string(photoRev)], ["id": "plain", "rev": "9-00000000000000000000000000000009"]]])

        let answer = try await HTTP.request(.POST, server.url + "/db/_bulk_get?revs=true", body: request.serializedBytes(),
                                            headers: [("Content-Type", "application/json"), ("Accept", "multipart/mixed")])
        XCTAssertEqual(answer.status, 200)
        let type = MediaType(parsing: try XCTUnwrap(answer.header("Content-Type")))
        XCTAssertEqual(type.type, "multipart/mixed")
        let parts = try await parts(of: answer.body, boundary: try XCTUnwrap(type.boundary))
        XCTAssertEqual(parts.count, 3)

        XCTAssertEqual(parts[0].headers["content-type"], "application/json")
        XCTAssertEqual(try JSON(parsing: parts[0].body)["_id"], "plain")
        XCTAssertNotNil(try JSON(parsing: parts[0].body)["_revisions"])

        XCTAssertEqual(parts[1].headers["x-doc-id"], "photo")
        XCTAssertEqual(parts[1].headers["x-rev-id"], photoRev)
        let related = MediaType(parsing: try XCTUnwrap(parts[1].headers["content-type"]))
        XCTAssertEqual(related.type, "multipart/related")
        let inner = try await self.parts(of: parts[1].body, boundary: try XCTUnwrap(related.boundary))
        XCTAssertEqual(inner.count, 2)
        let document = try JSON(parsing: inner[0].body)
        XCTAssertEqual(document["_attachments"]?["a.bin"]?["follows"], true)
        XCTAssertEqual(document["_attachments"]?["a.bin"]?["length"], 200_000)
        XCTAssertNil(document["_attachments"]?["a.bin"]?["data"])
        XCTAssertEqual(inner[1].headers.filename, "a.bin")
        XCTAssertTrue(inner[1].body == content, "the part is the attachment's bytes")

        XCTAssertEqual(parts[2].headers["content-type"], "application/json; error=\"true\"")
        XCTAssertEqual(try JSON(parsing: parts[2].body), ["rev": "9-00000000000000000000000000000009", "error": "not_found", "reason": "missing"])

        // A client that takes JSON (CouchDB's and PouchDB's replicators) still gets JSON.
        for accept in ["application/json", "*/*", "multipart/mixed, application/json"] {
            let json = try await HTTP.request(.POST, server.url + "/db/_bulk_get", body: request.serializedBytes(),
                                              headers: [("Content-Type", "application/json"), ("Accept", accept)])
            XCTAssertEqual(json.header("Content-Type"), "application/json", accept)
            XCTAssertEqual(try JSON(parsing: json.body)["results"]?.arrayValue?.count, 3, accept)
        }
    }

    // MARK: A CouchDB source

    private static let boundary = "--9d1e5a4cbbd64d8ba58c0c7bbd7d5f5e"
    private static let text = Array(String(repeating: "a line of notes to be kept gzip-encoded\n", count: 2000).utf8)

    /// A `_bulk_get` answer byte for byte as CouchDB 3.5 sends it (`send_docs_multipart_bulk_get`):
    /// the boundary itself starting with `--`, a document without attachments as
    /// `application/json`, one with a gzip-encoded attachment as `multipart/related`
    /// with `X-Doc-Id` and `X-Rev-Id`, and a missing revision naming only its revision.
    /// The attachment's declared digest is that of `declared` bytes, by default those sent.
    private static func couchDBAnswer(of content: [UInt8] = text, gzip: [UInt8], declaring declared: [UInt8]? = nil) -> [UInt8] {
        let md5 = "md5-" + Data(Insecure.MD5.hash(data: declared ?? gzip)).base64EncodedString()
        let notes: JSON = [
            "_id": "notes", "_rev": "1-00000000000000000000000000000002", "_revisions": ["start": 1, "ids": ["00000000000000000000000000000002"]],
            "title": "notes",
            "_attachments": ["notes.txt": ["content_type": "text/plain", "revpos": 1, "digest": .string(md5),
                                           "length": .number(Double(content.count)), "follows": true,
                                           "encoding": "gzip", "encoded_length": .number(Double(gzip.count))]],
        ]
        let inner = "b6d2a5e1f0c94e3c8f1f8a1d2c3b4a59"
        var body = Array("\r\n--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8)
        body += Array(#"{"_id":"plain","_rev":"1-00000000000000000000000000000001","_revisions":{"start":1,"ids":["00000000000000000000000000000001"]},"n":1}"#.utf8)
        body += Array("\r\n--\(boundary)\r\nX-Doc-Id: notes\r\nX-Rev-Id: 1-00000000000000000000000000000002\r\nContent-Type: multipart/related; boundary=\(inner)\r\n\r\n".utf8)
        body += Array("--\(inner)\r\nContent-Type: application/json\r\n\r\n".utf8) + notes.serializedBytes()
        body += Array("\r\n--\(inner)\r\nContent-Disposition: attachment; filename=\"notes.txt\"\r\nContent-Type: text/plain\r\nContent-Length: \(gzip.count)\r\n\r\n".utf8)
        body += gzip
        body += Array("\r\n--\(inner)--".utf8)
        body += Array("\r\n--\(boundary)\r\nContent-Type: application/json; error=\"true\"\r\n\r\n".utf8)
        body += Array(#"{"rev":"1-00000000000000000000000000000003","error":"not_found","reason":"missing"}"#.utf8)
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        return body
    }

    /// A CouchDB source of `plain`, `notes` and `gone`, answering `_bulk_get` with `answer`.
    private func couchDBSource(_ answer: @escaping @Sendable () -> HostileAnswer) throws -> RemoteEndpoint {
        let feed = JSON.object([
            "results": .array(["plain", "notes", "gone"].enumerated().map { n, id in
                ["seq": .number(Double(n + 1)), "id": .string(id), "changes": [["rev": .string("1-0000000000000000000000000000000\(n + 1)")]]]
            }),
            "last_seq": 3, "pending": 0,
        ]).serializedBytes()
        let server = try HostileRemote { method, target, body in
            func json(_ status: Int, _ text: String) -> HostileAnswer { HostileAnswer(status: status, body: Array(text.utf8)) }
            if target.hasPrefix("/db/_local/") { return method == "GET" ? json(404, #"{"error":"not_found","reason":"missing"}"#) : json(201, #"{"ok":true,"rev":"0-1"}"#) }
            if target.hasPrefix("/db/_changes") { return HostileAnswer(status: 200, body: feed) }
            if target.hasPrefix("/db/_bulk_get") { return answer() }
            if target == "/db/" || target == "/db" { return json(200, #"{"db_name":"db","uuid":"couchdb-source","update_seq":3}"#) }
            return json(404, #"{"error":"not_found","reason":"missing"}"#)
        }
        let endpoint = RemoteEndpoint(RemoteEndpoint.Configuration(url: try RemoteURL(server.url + "/db")))
        addTeardownBlock {
            await endpoint.shutdown()
            server.stop()
        }
        return endpoint
    }

    private func localTarget() throws -> (Catalog, Database) {
        let directory = try TemporaryDirectory(prefix: "syncd-multipart")
        let catalog = try Catalog(directory: directory.path)
        addTeardownBlock {
            catalog.close()
            directory.remove()
        }
        return (catalog, try catalog.create("copy"))
    }

    /// What the target's attachment folder holds: staged files in `tmp/`, and content files.
    private func attachmentFiles(of catalog: Catalog) throws -> (staging: [String], content: [String]) {
        let folder = catalog.directory + "/copy.sqlite.attachments"
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        return (try FileManager.default.contentsOfDirectory(atPath: folder + "/tmp"), names.filter { $0.count == 64 })
    }

    func testAPullOfCouchDBsMultipartAnswerStagesAttachmentsAndKeepsGzipEncoded() async throws {
        let gzip = try systemGzip(Self.text)
        let answer = Self.couchDBAnswer(gzip: gzip)
        let source = try couchDBSource { .slowly(answer, pieceSize: 1000, contentType: "multipart/mixed; boundary=\"\(Self.boundary)\"") }
        let (catalog, target) = try localTarget()
        var configuration = ReplicationConfiguration(source: source, target: LocalEndpoint(target))
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), oneShotAttempts: 1)
        let status = await Replicator(configuration).run()
        XCTAssertNil(status.lastError, "\(String(describing: status.lastError))")
        XCTAssertEqual(status.docsWritten, 2)
        XCTAssertEqual(try target.document(id: "plain").body["n"], 1)
        let notes = try target.attachment(documentID: "notes", name: "notes.txt")
        XCTAssertEqual(notes.encoding?.name, "gzip", "kept as CouchDB sent it")
        XCTAssertEqual(notes.length, Self.text.count)
        XCTAssertTrue(try target.attachmentContent(notes) == Self.text)
        XCTAssertThrowsError(try target.document(id: "gone")) { XCTAssertEqual($0 as? StoreError, .notFound()) }
        let files = try attachmentFiles(of: catalog)
        XCTAssertEqual(files.staging, [])
        XCTAssertEqual(files.content.count, 1)
    }

    func testADocumentWithMoreAttachmentsThanAnyNodeMayStoreIsCountedAndPassedAndTheRestIsWritten() async throws {
        // `notes` follows with one attachment more than a document may have: the listener
        // refuses such a document when written, and a pull counts it as a write failure and
        // goes on, where it had failed the whole answer and retried it for ever.
        let count = Database.maximumAttachments + 1
        var attachments = JSON.Object()
        for index in 0..<count {
            attachments["a\(index)"] = ["content_type": "text/plain", "revpos": 1, "digest": "md5-DMF1ucDxtqgxw5niaXcmYQ==", "length": 1, "follows": true]
        }
        let notes: JSON = ["_id": "notes", "_rev": "1-00000000000000000000000000000002",
                           "_revisions": ["start": 1, "ids": ["00000000000000000000000000000002"]], "_attachments": .object(attachments)]
        let inner = "b6d2a5e1f0c94e3c8f1f8a1d2c3b4a59"
        var body = Array("\r\n--\(Self.boundary)\r\nX-Doc-Id: notes\r\nContent-Type: multipart/related; boundary=\(inner)\r\n\r\n".utf8)
        body += Array("--\(inner)\r\nContent-Type: application/json\r\n\r\n".utf8) + notes.serializedBytes()
        for index in 0..<count {
            body += Array("\r\n--\(inner)\r\nContent-Disposition: attachment; filename=\"a\(index)\"\r\nContent-Length: 1\r\n\r\nb".utf8)
        }
        body += Array("\r\n--\(inner)--".utf8)
        body += Array("\r\n--\(Self.boundary)\r\nContent-Type: application/json\r\n\r\n".utf8)
        body += Array(#"{"_id":"plain","_rev":"1-00000000000000000000000000000001","_revisions":{"start":1,"ids":["00000000000000000000000000000001"]},"n":1}"#.utf8)
        body += Array("\r\n--\(Self.boundary)\r\nContent-Type: application/json; error=\"true\"\r\n\r\n".utf8)
        body += Array(#"{"rev":"1-00000000000000000000000000000003","error":"not_found","reason":"missing"}"#.utf8)
        body += Array("\r\n--\(Self.boundary)--\r\n".utf8)
        let answer = body
        let source = try couchDBSource { HostileAnswer(status: 200, body: answer, contentType: "multipart/mixed; boundary=\"\(Self.boundary)\"") }
        let (catalog, target) = try localTarget()
        var configuration = ReplicationConfiguration(source: source, target: LocalEndpoint(target))
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), oneShotAttempts: 1)
        let status = await Replicator(configuration).run()
        XCTAssertNil(status.lastError, "\(String(describing: status.lastError))")
        XCTAssertEqual(status.docsWritten, 1)
        XCTAssertEqual(status.docWriteFailures, 1)
        XCTAssertEqual(try target.document(id: "plain").body["n"], 1)
        XCTAssertThrowsError(try target.document(id: "notes")) { XCTAssertEqual($0 as? StoreError, .notFound()) }
        XCTAssertEqual(try attachmentFiles(of: catalog).staging, [], "nothing of the refused document is left staged")
    }

    func testAnAnswerCutInsideAnAttachmentLeavesNothingStagedAndPassesNothing() async throws {
        let content = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let gzip = try systemGzip(content)
        let whole = Self.couchDBAnswer(of: content, gzip: gzip)
        let cut = Flag()
        let source = try couchDBSource {
            var answer = HostileAnswer.slowly(whole, pieceSize: 64 << 10, contentType: "multipart/mixed; boundary=\"\(Self.boundary)\"")
            if cut.value != true {
                // The connection closes halfway through the attachment's bytes.
                answer.declaredLength = whole.count
                answer.pieces = Array(answer.pieces.prefix(answer.pieces.count / 2))
            }
            return answer
        }
        let (catalog, target) = try localTarget()
        var configuration = ReplicationConfiguration(source: source, target: LocalEndpoint(target))
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), oneShotAttempts: 1)
        let failed = await Replicator(configuration).run()
        XCTAssertNotNil(failed.lastError)
        XCTAssertFalse(["2", "3"].contains(failed.checkpointedSequence?.description), "no checkpoint passes the cut document")
        XCTAssertThrowsError(try target.document(id: "notes")) { XCTAssertEqual($0 as? StoreError, .notFound()) }
        XCTAssertEqual(try attachmentFiles(of: catalog).staging, [], "the part cut off is not left staged")

        // Once the source answers whole, the same replication completes.
        cut.set(true)
        let status = await Replicator(configuration).run()
        XCTAssertNil(status.lastError, "\(String(describing: status.lastError))")
        XCTAssertTrue(try target.attachmentContent(try target.attachment(documentID: "notes", name: "notes.txt")) == content)
        XCTAssertEqual(try attachmentFiles(of: catalog).staging, [])
    }

    /// Over one batch, a part is hashed on threads of its own while its file is written; bytes
    /// that do not match the digest the document declares are still refused, and nothing is kept
    /// (the staged file goes at the next compaction, as every unreferenced file does).
    func testAPartWhoseBytesDoNotMatchItsDigestIsRefusedAndNothingKept() async throws {
        // Random bytes, gzipped by the system's gzip through files (they do not shrink, so no pipe holds them).
        let directory = try TemporaryDirectory(prefix: "syncd-digest")
        defer { directory.remove() }
        let content = [UInt8](try XCTUnwrap(FileHandle(forReadingAtPath: "/dev/urandom")?.readData(ofLength: 3 << 20)))
        let plain = directory.path + "/content"
        XCTAssertTrue(FileManager.default.createFile(atPath: plain, contents: Data(content)))
        let gzipping = try Process.run(URL(fileURLWithPath: "/bin/gzip"), arguments: ["-k", "-1", plain])
        gzipping.waitUntilExit()
        let gzip = [UInt8](try Data(contentsOf: URL(fileURLWithPath: plain + ".gz")))
        XCTAssertGreaterThan(gzip.count, 2 << 20, "the part spans several of the writer's batches")
        var declared = gzip
        declared[declared.count - 100] ^= 0x40
        let answer = Self.couchDBAnswer(of: content, gzip: gzip, declaring: declared)
        let source = try couchDBSource { .slowly(answer, pieceSize: 64 << 10, contentType: "multipart/mixed; boundary=\"\(Self.boundary)\"") }
        let (catalog, target) = try localTarget()
        var configuration = ReplicationConfiguration(source: source, target: LocalEndpoint(target))
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), oneShotAttempts: 1)
        let status = await Replicator(configuration).run()
        XCTAssertEqual(try target.document(id: "plain").body["n"], 1)
        XCTAssertThrowsError(try target.document(id: "notes"), "content that does not match its digest is not stored") {
            XCTAssertEqual($0 as? StoreError, .notFound())
        }
        XCTAssertEqual(status.docWriteFailures, 1)
        // The refused content is pinned by nothing and referred to by no revision: compaction takes its file.
        try await target.compact()
        let files = try attachmentFiles(of: catalog)
        XCTAssertEqual(files.staging, [])
        XCTAssertEqual(files.content, [], "the refused content's file is gone")
    }

    /// Remote to remote (`syncd replicate URL URL`): parts wait in a spool of the
    /// target endpoint's own, which is gone once the endpoint is shut down.
    func testRemoteToRemoteSpoolsAttachmentsAndRemovesTheSpool() async throws {
        let server = try await startListener()
        for name in ["from", "to"] { try await assertEqual(try await HTTP.json(.PUT, server.url + "/" + name).status, 201) }
        let content = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 11) }
        let put = try await HTTP.request(.PUT, server.url + "/from/doc/a.bin", body: content, headers: [("Content-Type", "application/octet-stream")])
        XCTAssertEqual(put.status, 201, put.text)
        let source = try RemoteEndpoint(url: server.url + "/from")
        let target = try RemoteEndpoint(url: server.url + "/to")
        let status = await Replicator(ReplicationConfiguration(source: source, target: target)).run()
        XCTAssertNil(status.lastError, "\(String(describing: status.lastError))")
        let copy = try server.catalog.database("to").attachment(documentID: "doc", name: "a.bin")
        XCTAssertEqual(copy.digest, "md5-" + Data(Insecure.MD5.hash(data: content)).base64EncodedString())
        XCTAssertTrue(FileManager.default.fileExists(atPath: target.spool.folder), "the part went through the spool")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: target.spool.folder).filter { $0.count == 64 }, [],
                       "each file leaves the spool once written")
        await source.shutdown()
        await target.shutdown()
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.spool.folder))
    }

    // MARK: syncd to syncd, in bounded memory


    func testA64MiBAttachmentIsPulledAndPushedWithoutBeingHeldInMemory() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/back").status, 201)
        let size = 64 << 20
        var content = [UInt8](repeating: 0, count: size)
        var generator = SystemRandomNumberGenerator()
        for index in stride(from: 0, to: size, by: 8) {
            withUnsafeBytes(of: generator.next() as UInt64) { content.replaceSubrange(index..<index + 8, with: $0) }
        }
        let put = try await HTTP.request(.PUT, server.url + "/db/video/clip.bin", body: content, headers: [("Content-Type", "video/x-test")])
        XCTAssertEqual(put.status, 201, put.text)
        let digest = "md5-" + Data(Insecure.MD5.hash(data: content)).base64EncodedString()
        content = []
        let (_, local) = try localTarget()
        let remote = try RemoteEndpoint(url: server.url + "/db")
        let back = try RemoteEndpoint(url: server.url + "/back")
        addTeardownBlock {
            await remote.shutdown()
            await back.shutdown()
        }

        try MemoryBound.resetPeak()
        var before = try MemoryBound.current()
        let pulled = await Replicator(ReplicationConfiguration(source: remote, target: LocalEndpoint(local))).run()
        XCTAssertNil(pulled.lastError, "\(String(describing: pulled.lastError))")
        let pullGrowth = try MemoryBound.peak() - before
        let copy = try local.attachment(documentID: "video", name: "clip.bin")
        XCTAssertEqual(copy.digest, digest)
        XCTAssertEqual(copy.length, size)

        try MemoryBound.resetPeak()
        before = try MemoryBound.current()
        let pushed = await Replicator(ReplicationConfiguration(source: LocalEndpoint(local), target: back)).run()
        XCTAssertNil(pushed.lastError, "\(String(describing: pushed.lastError))")
        let pushGrowth = try MemoryBound.peak() - before
        let returned = try server.catalog.database("back").attachment(documentID: "video", name: "clip.bin")
        XCTAssertEqual(returned.digest, digest)
        XCTAssertEqual(returned.length, size)

        // Byte ranges of the copy that came back are the original's.
        for range in ["bytes=0-99", "bytes=33554400-33554499", "bytes=-100"] {
            let original = try await HTTP.request(.GET, server.url + "/db/video/clip.bin", headers: [("Range", range)])
            let copy = try await HTTP.request(.GET, server.url + "/back/video/clip.bin", headers: [("Range", range)])
            XCTAssertEqual(copy.status, 206, range)
            XCTAssertEqual(copy.body.count, 100, range)
            XCTAssertTrue(copy.body == original.body, range)
        }

        // Listener and replicator share this process: neither holds the 64 MiB, let alone its base64.
        // (ThreadSanitizer's shadow memory and allocator make RSS no measure of the code's.)
        guard !MemoryBound.underSanitizer else { return }
        XCTAssertLessThan(pullGrowth, 32 << 20, "pull: peak RSS grew by \(pullGrowth >> 20) MiB")
        XCTAssertLessThan(pushGrowth, 32 << 20, "push: peak RSS grew by \(pushGrowth >> 20) MiB")
    }
}

/// A document's JSON read from a remote is bounded like CouchDB's `max_document_size`:
/// a source that sends one of 100 MB stops the replication with an error that says so,
/// and the replicator never holds much more than the bound.
final class RemoteDocumentBoundTests: XCTestCase {
    func testADocumentOverTheBoundIsRefusedWithoutBeingHeld() async throws {
        // 100 MB of one string, sent in 64 KiB pieces that share one buffer.
        let piece = [UInt8](repeating: UInt8(ascii: "x"), count: 64 << 10)
        let pieces = Array(repeating: piece, count: 1600)
        let document = Array(#"{"_id":"huge","_rev":"1-00000000000000000000000000000001","_revisions":{"start":1,"ids":["00000000000000000000000000000001"]},"big":""#.utf8)
        let feed = Array(#"{"results":[{"seq":1,"id":"huge","changes":[{"rev":"1-00000000000000000000000000000001"}]}],"last_seq":1,"pending":0}"#.utf8)
        let asked = Locked<[String]>([])
        let server = try HostileRemote { (method: String, target: String, _: [UInt8]) -> HostileAnswer in
            func json(_ status: Int, _ text: String) -> HostileAnswer { HostileAnswer(status: status, body: Array(text.utf8)) }
            if target.hasPrefix("/db/_local/") { return method == "GET" ? json(404, #"{"error":"not_found","reason":"missing"}"#) : json(201, #"{"ok":true,"rev":"0-1"}"#) }
            if target.hasPrefix("/db/_changes") { return HostileAnswer(status: 200, body: feed) }
            if target == "/db/" || target == "/db" { return json(200, #"{"db_name":"db","uuid":"huge-source","update_seq":1}"#) }
            // JSON whatever was asked for: `_bulk_get`'s one result, then `open_revs`' array.
            var answer = HostileAnswer(status: 200, body: [])
            if target.hasPrefix("/db/_bulk_get") {
                asked.withLock { $0.append("_bulk_get") }
                answer.pieces = [Array(#"{"results":[{"id":"huge","docs":[{"ok":"#.utf8) + document] + pieces + [Array(#""}}]}]}"#.utf8)]
            } else {
                asked.withLock { $0.append("open_revs") }
                answer.pieces = [Array(#"[{"ok":"#.utf8) + document] + pieces + [Array(#""}}]"#.utf8)]
            }
            return answer
        }
        let source = RemoteEndpoint(RemoteEndpoint.Configuration(url: try RemoteURL(server.url + "/db")))
        let directory = try TemporaryDirectory(prefix: "syncd-bound")
        let catalog = try Catalog(directory: directory.path)
        addTeardownBlock {
            await source.shutdown()
            server.stop()
            catalog.close()
            directory.remove()
        }
        let target = try catalog.create("copy")
        var configuration = ReplicationConfiguration(source: source, target: LocalEndpoint(target))
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), oneShotAttempts: 1)

        try MemoryBound.resetPeak()
        let before = try MemoryBound.current()
        let status = await Replicator(configuration).run()
        let growth = try MemoryBound.peak() - before

        let error = try XCTUnwrap(status.lastError)
        XCTAssertTrue("\(error)".contains("larger than the document bound of 8000000 bytes"), "\(error)")
        XCTAssertEqual(try target.info().docCount, 0)
        XCTAssertEqual(asked.withLock { $0 }.prefix(2), ["_bulk_get", "open_revs"], "the oversized result is asked for again as multipart")
        guard !MemoryBound.underSanitizer else { return }
        XCTAssertLessThan(growth, 48 << 20, "peak RSS grew by \(growth >> 20) MiB reading a 100 MB document")
    }
}

import Foundation
import JSON
import Store
import SyncAgent
import XCTest

/// The source's answers of revisions are read as they arrive: a `_bulk_get` answer
/// one result at a time, an `open_revs` answer part by part; whatever the chunks, what
/// is replicated is exact, and an answer badly framed stops the replication with a clear
/// error and no checkpoint past it.
final class StreamedRevisionsTests: XCTestCase {
    /// Documents whose ids and bodies hold escapes, quotes and brackets, each with an attachment.
    private static func documents(_ count: Int, attachmentSize: Int = 3000) -> [JSON] {
        (0..<count).map { n in
            let hash = String(format: "%032x", n + 1)
            let content = (0..<attachmentSize).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) }
            return [
                "_id": .string("doc \(n) \"q\" \\ ]},"), "_rev": .string("1-\(hash)"),
                "_revisions": ["start": 1, "ids": [.string(hash)]],
                "text": .string("line\nbreak \"quoted\" \\\\ \u{e9} \u{2603} ]},[{ \(n)"),
                "_attachments": ["a.bin": ["content_type": "application/octet-stream",
                                           "data": .string(Data(content).base64EncodedString())]],
            ]
        }
    }

    /// A source serving `documents`: its feed lists them, its checkpoints are accepted,
    /// `_bulk_get` and `open_revs` are answered by the test.
    private func source(
        _ documents: [JSON], requestTimeout: Duration = .seconds(120),
        bulkGet: @escaping @Sendable (_ askedIDs: [String]) -> HostileAnswer,
        openRevs: @escaping @Sendable (_ target: String) -> HostileAnswer = { _ in HostileAnswer(status: 404, body: Array(#"{"error":"not_found","reason":"missing"}"#.utf8)) }
    ) throws -> RemoteEndpoint {
        let feed = JSON.object([
            "results": .array(documents.enumerated().map { n, document in
                ["seq": .number(Double(n + 1)), "id": document["_id"]!, "changes": [["rev": document["_rev"]!]]]
            }),
            "last_seq": .number(Double(documents.count)), "pending": 0,
        ]).serializedBytes()
        let server = try HostileRemote { method, target, body in
            func json(_ status: Int, _ text: String) -> HostileAnswer { HostileAnswer(status: status, body: Array(text.utf8)) }
            if target.hasPrefix("/db/_local/") { return method == "GET" ? json(404, #"{"error":"not_found","reason":"missing"}"#) : json(201, #"{"ok":true,"rev":"0-1"}"#) }
            if target.hasPrefix("/db/_changes") { return HostileAnswer(status: 200, body: feed) }
            if target.hasPrefix("/db/_bulk_get") {
                let asked = ((try? JSON(parsing: body))?["docs"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
                return bulkGet(asked)
            }
            if target == "/db/" || target == "/db" { return json(200, #"{"db_name":"db","uuid":"streaming-source","update_seq":1}"#) }
            if target.contains("open_revs=") { return openRevs(target) }
            return json(404, #"{"error":"not_found","reason":"missing"}"#)
        }
        let endpoint = RemoteEndpoint(RemoteEndpoint.Configuration(url: try RemoteURL(server.url + "/db"), requestTimeout: requestTimeout))
        addTeardownBlock {
            await endpoint.shutdown()
            server.stop()
        }
        return endpoint
    }

    /// `_bulk_get`'s answer for `ids`, each document found in `documents`.
    private static func bulkGetAnswer(_ ids: [String], from documents: [JSON]) -> [UInt8] {
        JSON.object(["results": .array(ids.map { id in
            ["id": .string(id), "docs": [["ok": documents.first { $0["_id"]?.stringValue == id }!]]]
        })]).serializedBytes()
    }

    private func replicate(from source: RemoteEndpoint) async throws -> (ReplicationStatus, Database) {
        let directory = try TemporaryDirectory(prefix: "syncd-streamed")
        let catalog = try Catalog(directory: directory.path)
        addTeardownBlock {
            catalog.close()
            directory.remove()
        }
        let target = try catalog.create("copy")
        var configuration = ReplicationConfiguration(source: source, target: LocalEndpoint(target))
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), oneShotAttempts: 2)
        let status = await Replicator(configuration).run()
        return (status, target)
    }

    private func expectCopied(_ documents: [JSON], in target: Database, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try target.info().docCount, documents.count, file: file, line: line)
        for document in documents {
            let id = document["_id"]!.stringValue!
            let copy = try target.document(id: id)
            XCTAssertEqual(copy.revision.description, document["_rev"]?.stringValue, file: file, line: line)
            XCTAssertEqual(copy.body["text"], document["text"], file: file, line: line)
            for (name, entry) in document["_attachments"]!.objectValue! {
                let content = try target.attachmentContent(try target.attachment(documentID: id, name: name))
                XCTAssertEqual(Data(content).base64EncodedString(), entry["data"]?.stringValue, "\(id)/\(name)", file: file, line: line)
            }
        }
    }

    /// A `_bulk_get` answer arriving in 7-byte pieces (every string, escape and base64 run
    /// cut somewhere) replicates exactly.
    func testABulkGetAnswerInManySmallChunksReplicatesExactly() async throws {
        let documents = Self.documents(30)
        let source = try source(documents) { ids in .slowly(Self.bulkGetAnswer(ids, from: documents), pieceSize: 7) }
        let (status, target) = try await replicate(from: source)
        XCTAssertNil(status.lastError, "\(String(describing: status.lastError))")
        XCTAssertEqual(status.docsWritten, 30)
        try expectCopied(documents, in: target)
    }

    /// The first revision is handed on while the rest of the answer has not been sent:
    /// the answer is read as a stream, not collected whole first.
    func testRevisionsAreDeliveredBeforeTheAnswerEnds() async throws {
        let documents = Self.documents(2)
        let firstDelivered = DispatchSemaphore(value: 0)
        let releasedByDelivery = Flag()
        let endpoint = try source(documents) { ids in
            let whole = Self.bulkGetAnswer(ids, from: documents)
            let cut = whole.count / 2 + 200 // past the first result, inside the second
            var answer = HostileAnswer(status: 200, body: Array(whole[..<cut]))
            answer.pieces.append(Array(whole[cut...]))
            answer.beforePiece = { index in
                // Waits (a while at most) for the client to have handed on the first revision.
                if index == 1 { releasedByDelivery.set(firstDelivered.wait(timeout: .now() + 20) == .success) }
            }
            return answer
        }
        var delivered: [String] = []
        try await endpoint.revisions(documents.map { MissingRevisions(id: $0["_id"]!.stringValue!, missing: [RevisionID($0["_rev"]!.stringValue!)!]) }, staging: .inline) { revision in
            guard case .found(let found) = revision else { return XCTFail("\(revision)") }
            delivered.append(found.id)
            if delivered.count == 1 { firstDelivered.signal() }
        }
        XCTAssertEqual(delivered, documents.map { $0["_id"]!.stringValue! })
        XCTAssertEqual(releasedByDelivery.value, true, "the first revision came only once the whole answer was read")
    }

    /// Each badly framed or unasked-for `_bulk_get` answer stops the replication with a
    /// `bad_response` that says what is wrong, and no checkpoint passes the batch.
    func testABadlyFramedBulkGetAnswerStopsTheReplicationWithoutACheckpoint() async throws {
        let documents = Self.documents(3)
        let good = String(decoding: Self.bulkGetAnswer(documents.map { $0["_id"]!.stringValue! }, from: documents), as: UTF8.self)
        let firstResult = #"{"id":"doc 0 \"q\" \\ ]},","docs":[{"ok":{"_id":"doc 0 \"q\" \\ ]},","_rev":"1-00000000000000000000000000000001"}}]}"#
        let cases: [(answer: String, reason: String)] = [
            (String(good.dropLast(40)), "ended inside a string"),
            (String(good.dropLast(2)), "ended early"),
            (good + "x", "after the answer"),
            (#"{"results":["# + firstResult + "," + firstResult + "," + firstResult + "," + firstResult + "]}", "more results than the 3 asked for"),
            (#"{"results":[{"id":"intruder","docs":[{"ok":{"_id":"intruder","_rev":"1-a"}}]}]}"#, "not asked for"),
            (#"{"results":[{"id":"_local/x","docs":[{"ok":{"_id":"_local/x","_rev":"1-a"}}]}]}"#, "not asked for"),
            (#"{"results":[{"id":"doc 0", "docs":[}]}"#, "mismatched"),
            (#"{"results":[{"id":"doc 0", "docs":[tru]}]}"#, "not JSON"),
            (#"{"results":{}}"#, "not an array"),
            (#"{"results":[]}"#, "left it out"),
        ]
        for (answer, reason) in cases {
            let source = try source(documents) { _ in .slowly(Array(answer.utf8), pieceSize: 64) }
            let (status, target) = try await replicate(from: source)
            XCTAssertEqual(status.lastError?.error, "bad_response", "\(answer): \(String(describing: status.lastError))")
            XCTAssertTrue(status.lastError?.reason.contains(reason) == true, "\(reason): \(String(describing: status.lastError))")
            XCTAssertEqual(status.checkpointedSequence, .zero, answer)
            XCTAssertEqual(status.completed, 0, answer)
            XCTAssertEqual(try target.info().docCount, 0, answer)
        }
    }

    /// A source that stops sending in the middle of an answer is given up on after the
    /// request timeout: the replication stops, it does not wait for ever.
    func testAnAnswerThatStallsMidwayIsGivenUpOn() async throws {
        let documents = Self.documents(2)
        let release = DispatchSemaphore(value: 0)
        let source = try source(documents, requestTimeout: .seconds(1)) { ids in
            let whole = Self.bulkGetAnswer(ids, from: documents)
            var answer = HostileAnswer(status: 200, body: Array(whole[..<(whole.count / 2)]))
            answer.pieces.append(Array(whole[(whole.count / 2)...]))
            answer.beforePiece = { index in if index == 1 { _ = release.wait(timeout: .now() + 30) } }
            return answer
        }
        defer { for _ in 0..<4 { release.signal() } }
        let (status, target) = try await replicate(from: source)
        XCTAssertEqual(status.lastError?.error, "unreachable", "\(String(describing: status.lastError))")
        XCTAssertEqual(status.checkpointedSequence, .zero)
        XCTAssertEqual(try target.info().docCount, 0)
    }

    /// Where the source has no `_bulk_get` (404, 405, 501, or 400 `illegal_docid` as old
    /// CouchDB versions answer), `open_revs` answers with many attachment parts, arriving in
    /// 11-byte pieces, replicate exactly.
    func testOpenRevisionsMultipartWithManyAttachmentsInSmallChunks() async throws {
        for (status, error) in [(404, "not_found"), (405, "method_not_allowed"), (501, "not_implemented"), (400, "illegal_docid")] {
            try await replicateByOpenRevisions(whereBulkGetAnswers: HostileAnswer(
                status: status, body: Array(#"{"error":"\#(error)","reason":"no _bulk_get here"}"#.utf8)))
        }
    }

    private func replicateByOpenRevisions(whereBulkGetAnswers refusal: HostileAnswer) async throws {
        var documents = Self.documents(3, attachmentSize: 1500)
        for index in documents.indices {
            var attachments = JSON.Object()
            for a in 0..<20 {
                let content = (0..<(500 + a * 37)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ a &+ index) }
                attachments["att \(a).bin"] = ["content_type": "application/octet-stream", "data": .string(Data(content).base64EncodedString())]
            }
            guard case .object(var document) = documents[index] else { return XCTFail() }
            document["_attachments"] = .object(attachments)
            documents[index] = .object(document)
        }
        let served = documents
        let source = try source(documents, bulkGet: { _ in refusal },
                                openRevs: { target in
            let path = target.split(separator: "?")[0].dropFirst("/db/".count)
            let id = String(path).removingPercentEncoding!
            let document = served.first { $0["_id"]?.stringValue == id }!
            return .slowly(Self.multipartAnswer(document), pieceSize: 11, contentType: #"multipart/mixed; boundary="outer-boundary""#)
        })
        let (status, target) = try await replicate(from: source)
        XCTAssertNil(status.lastError, "\(refusal.status): \(String(describing: status.lastError))")
        XCTAssertEqual(status.docsWritten, 3)
        try expectCopied(documents, in: target)
    }

    /// CouchDB's `open_revs` answer for one revision: a `multipart/related` part with the
    /// document, its attachments `follows`, then one part per attachment.
    private static func multipartAnswer(_ document: JSON) -> [UInt8] {
        guard case .object(var fields) = document, case .object(let attachments)? = fields["_attachments"] else { return [] }
        var described = JSON.Object()
        var contents: [(String, Data)] = []
        for (name, entry) in attachments {
            let data = Data(base64Encoded: entry["data"]!.stringValue!)!
            described[name] = ["content_type": "application/octet-stream", "length": .number(Double(data.count)), "follows": true, "revpos": 1]
            contents.append((name, data))
        }
        fields["_attachments"] = .object(described)
        var body = Array("--outer-boundary\r\nContent-Type: multipart/related; boundary=\"inner\"\r\n\r\n--inner\r\nContent-Type: application/json\r\n\r\n".utf8)
        body += JSON.object(fields).serializedBytes()
        for (name, data) in contents {
            body += Array("\r\n--inner\r\nContent-Disposition: attachment; filename=\"\(name)\"\r\nContent-Type: application/octet-stream\r\nContent-Length: \(data.count)\r\n\r\n".utf8)
            body += Array(data)
        }
        body += Array("\r\n--inner--\r\n--outer-boundary--".utf8)
        return body
    }
}

import Crypto
import Foundation
import JSON
import XCTest
@testable import Store

/// Creating, updating and deleting documents with CouchDB's MVCC rules.
final class DocumentWriteTests: DatabaseTestCase {
    func testCreateReadUpdate() async throws {
        let first = try await database.put(json(#"{"_id":"a","title":"hello","n":1}"#)).revision
        XCTAssertEqual(first.generation, 1)
        XCTAssertEqual(first.digest.count, 32)
        let read = try database.document(id: "a")
        XCTAssertEqual(read.revision, first)
        // Bodies are stored in canonical form: members sorted by key.
        XCTAssertEqual(read.body, ["n": 1, "title": "hello"])
        XCTAssertEqual(read.json().serialized(), #"{"_id":"a","_rev":"\#(first)","n":1,"title":"hello"}"#)

        let second = try await database.put(json(#"{"_id":"a","_rev":"\#(first)","title":"bye"}"#)).revision
        XCTAssertEqual(second.generation, 2)
        XCTAssertEqual(try database.document(id: "a").body, ["title": "bye"])
        XCTAssertEqual(try database.document(id: "a", revision: first).body["title"], "hello")
        XCTAssertEqual(try database.document(id: "a").history, [second, first])
    }

    /// The digest is MD5 over the deletion flag, the parent revision and a zero
    /// byte, and the body with keys sorted: fixed, so peers running any version agree.
    func testRevisionDigestIsTheMD5OfTheEdit() async throws {
        func md5(_ bytes: [UInt8]) -> String { Insecure.MD5.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }
        let first = try await database.put(json(#"{"z":[true,null],"_id":"d","a":{"y":1,"x":"é"}}"#)).revision
        XCTAssertEqual(first.digest, md5([0, 0] + Array(#"{"a":{"x":"é","y":1},"z":[true,null]}"#.utf8)))
        let second = try await database.delete(id: "d", revision: first)
        XCTAssertEqual(second.digest, md5([1] + Array(first.description.utf8) + [0] + Array("{}".utf8)))
    }

    func testGeneratedIDsAreUnique() async throws {
        let a = try await database.put(["x": 1])
        let b = try await database.put(["x": 1])
        XCTAssertNotEqual(a.id, b.id)
        XCTAssertEqual(a.id.count, 32)
    }

    func testStaleRevisionIsAConflictAndChangesNothing() async throws {
        let first = try await database.put(["_id": "a", "v": 1]).revision
        _ = try await database.put(["_id": "a", "_rev": .string(first.description), "v": 2])
        await assertRefused("conflict") { try await self.database.put(["_id": "a", "_rev": .string(first.description), "v": 3]) }
        await assertRefused("conflict") { try await self.database.put(["_id": "a", "v": 4]) }
        await assertRefused("conflict") { try await self.database.put(["_id": "new", "_rev": "1-abc", "v": 4]) }
        XCTAssertEqual(try database.document(id: "a").body["v"], 2)
        XCTAssertEqual(try database.info().updateSequence, 2)
    }

    func testSameEditOnTwoDatabasesMakesTheSameRevision() async throws {
        let other = try Database.open(path: directory.file("other.sqlite"))
        defer { other.close() }
        let a1 = try await database.put(json(#"{"_id":"d","a":1,"b":[true,null]}"#)).revision
        let b1 = try await other.put(json(#"{"b":[true,null],"_id":"d","a":1}"#)).revision
        XCTAssertEqual(a1, b1, "key order must not change the revision id")
        let a2 = try await database.put(json(#"{"_id":"d","_rev":"\#(a1)","a":2}"#)).revision
        let b2 = try await other.put(json(#"{"_id":"d","_rev":"\#(b1)","a":2}"#)).revision
        XCTAssertEqual(a2, b2)
        let b3 = try await other.put(json(#"{"_id":"d","_rev":"\#(b2)","a":3}"#)).revision
        XCTAssertNotEqual(b3, a2)
    }

    func testDeleteKeepsATombstoneAndRecreationExtendsIt() async throws {
        let first = try await database.put(["_id": "a", "v": 1]).revision
        let tombstone = try await database.put(["_id": "a", "_rev": .string(first.description), "_deleted": true, "reason": "gone"]).revision
        await assertRefused("not_found") { try self.database.document(id: "a") }
        XCTAssertEqual(Result { () throws(StoreError) in try database.document(id: "a") }.failureError?.reason, "deleted")
        let deleted = try database.document(id: "a", revision: tombstone)
        XCTAssertTrue(deleted.deleted)
        XCTAssertEqual(deleted.body["reason"], "gone", "a tombstone may keep fields")
        XCTAssertEqual(try database.info().docCount, 0)
        XCTAssertEqual(try database.info().deletedDocCount, 1)

        let again = try await database.put(["_id": "a", "v": 2]).revision
        XCTAssertEqual(again.generation, 3)
        XCTAssertEqual(try database.document(id: "a").history, [again, tombstone, first])
        XCTAssertEqual(try database.info().docCount, 1)
        XCTAssertEqual(try database.info().deletedDocCount, 0)
    }

    func testInvalidInputIsRefusedAndTouchesNothing() async throws {
        let first = try await database.put(["_id": "keep", "v": 1]).revision
        await assertRefused("bad_request") { try await self.database.put(["a", "b"]) }
        await assertRefused("illegal_docid") { try await self.database.put(["_id": "_secret", "v": 1]) }
        await assertRefused("illegal_docid") { try await self.database.put(["_id": "", "v": 1]) }
        await assertRefused("illegal_docid") { try await self.database.put(["_id": 5, "v": 1]) }
        await assertRefused("bad_request") { try await self.database.put(["_id": "keep", "_rev": "nonsense", "v": 2]) }
        await assertRefused("bad_request") { try await self.database.put(["_id": "keep", "_rev": "0-abc", "v": 2]) }
        await assertRefused("doc_validation") { try await self.database.put(["_id": "keep", "_rev": .string(first.description), "_foo": 1]) }
        await assertRefused("bad_request") {
            try await self.database.put(json(#"{"_id":"keep","_rev":"2-aa","_revisions":{"start":2,"ids":["bb","\#(first.digest)"]}}"#), newEdits: false)
        }
        await assertRefused("bad_request") { try await self.database.put(["_id": "x", "_deleted": "yes"]) }
        let design = try await database.put(["_id": "_design/app", "views": [:]])
        XCTAssertEqual(design.id, "_design/app")
        XCTAssertEqual(try database.document(id: "keep").revision, first)
        XCTAssertEqual(try database.info().docCount, 2)
    }

    func testInvalidJSONTextIsASyntaxError() {
        XCTAssertThrowsError(try JSON(parsing: #"{"a":}"#)) { XCTAssertEqual(($0 as? JSONSyntaxError)?.message, "unexpected character") }
        XCTAssertThrowsError(try JSON(parsing: [0x22, 0xFF, 0x22])) { XCTAssertEqual(($0 as? JSONSyntaxError)?.message, "invalid UTF-8 in string") }
    }

    func testBulkWriteReturnsAResultPerDocument() async throws {
        let first = try await database.put(["_id": "exists", "v": 1]).revision
        let results = try await database.bulkDocs([
            DocumentUpload(["_id": "one", "v": 1]),
            DocumentUpload(["_id": "exists", "v": 2]),
            DocumentUpload(["_id": "_bad"]),
            DocumentUpload(["_id": "exists", "_rev": .string(first.description), "v": 3]),
        ])
        XCTAssertEqual(results.map(\.id), ["one", "exists", "_bad", "exists"])
        XCTAssertNoThrow(try results[0].result.get())
        XCTAssertEqual(results[1].result.failureError?.error, "conflict")
        XCTAssertEqual(results[2].result.failureError?.error, "illegal_docid")
        XCTAssertEqual(try results[3].result.get().generation, 2)
    }

    /// A batch of many chunks, checked partly by the caller and partly by the
    /// writer, still gives each upload its own result, in order, with later
    /// uploads seeing earlier ones.
    func testLargeBulkWriteKeepsOrderAndPerDocumentOutcomes() async throws {
        let existing = try await database.put(["_id": "existing", "v": 0]).revision
        var uploads: [DocumentUpload] = []
        var expected: [String?] = []  // nil: written; else the error
        for index in 0..<1500 {
            switch index % 10 {
            case 3: uploads.append(DocumentUpload(["_id": .string("_bad-\(index)")])); expected.append("illegal_docid")
            case 5: uploads.append(DocumentUpload(["_id": .string("doc-\(index - 1)")])); expected.append("conflict")
            case 7: uploads.append(DocumentUpload(.array([]))); expected.append("bad_request")
            default: uploads.append(DocumentUpload(["_id": .string("doc-\(index)"), "n": .number(Double(index))])); expected.append(nil)
            }
        }
        uploads[1000] = DocumentUpload(["_id": "existing", "_rev": .string(existing.description), "v": 1])
        expected[1000] = nil
        let results = try await database.bulkDocs(uploads)
        XCTAssertEqual(results.count, uploads.count)
        for (index, result) in results.enumerated() {
            XCTAssertEqual(result.result.failureError?.error, expected[index], "upload \(index)")
            XCTAssertEqual(result.id, uploads[index].json["_id"]?.stringValue ?? "", "upload \(index)")
        }
        XCTAssertEqual(try database.document(id: "existing").revision.generation, 2)
        XCTAssertEqual(try database.document(id: "doc-1498").body["n"], 1498)
        XCTAssertEqual(try database.info().docCount, expected.filter { $0 == nil }.count)
    }

    /// Among new documents in one bulk write, one whose id is taken is refused
    /// without using a sequence, and the others' sequences stay in order.
    func testTakenIdsAmongNewDocumentsUseNoSequence() async throws {
        _ = try await database.put(["_id": "b", "v": 0])
        let results = try await database.bulkDocs(["a", "b", "c", "b", "d"].map { DocumentUpload(["_id": .string($0), "v": 1]) })
        XCTAssertEqual(results.map { $0.result.failureError?.error }, [nil, "conflict", nil, "conflict", nil])
        XCTAssertEqual(try database.info().updateSequence, 4)
        let changes = try database.changes(ChangesOptions(since: 1)).changes
        XCTAssertEqual(changes.map(\.id), ["a", "c", "d"])
        XCTAssertEqual(changes.map(\.sequence), [2, 3, 4])
        XCTAssertEqual(try database.document(id: "b").body["v"], 0)
    }

    func testDocumentSizeLimit() async throws {
        var options = Database.Options()
        options.maximumDocumentSize = 1000
        let small = try Database.open(path: directory.file("small.sqlite"), options: options)
        defer { small.close() }
        do {
            try await small.put(["_id": "big", "text": .string(String(repeating: "x", count: 2000))])
            XCTFail("a body over the limit was written")
        } catch {
            // CouchDB's answer: 413 {"error":"document_too_large","reason":"<the document's id>"}.
            XCTAssertEqual(error, StoreError(.tooLarge, error: "document_too_large", reason: "big"))
        }
        XCTAssertEqual(try small.info().docCount, 0)
    }

    /// CouchDB's `max_document_size` counts the body without its attachments: inline data
    /// well over the limit is taken, a body just over it is not, whichever way it arrives.
    func testDocumentSizeLimitCountsTheBodyWithoutAttachments() async throws {
        var options = Database.Options()
        options.maximumDocumentSize = 1000
        let small = try Database.open(path: directory.file("small.sqlite"), options: options)
        defer { small.close() }
        let inline = Data(repeating: 7, count: 5000).base64EncodedString()
        let photo = try await small.put(["_id": "photo", "caption": "sea", "_attachments": ["p.jpg": ["content_type": "image/jpeg", "data": .string(inline)]]])
        XCTAssertEqual(try small.document(id: "photo").attachments.first?.length, 5000, "\(photo)")
        // The body alone at the limit is taken; one byte more is not. `{"t":"…"}` is 8 bytes around the text.
        try await small.put(["_id": "edge", "t": .string(String(repeating: "x", count: 992))])
        await assertRefused("document_too_large") {
            try await small.put(["_id": "over", "t": .string(String(repeating: "x", count: 993))])
        }
        // Replication's writes (new_edits=false, as LocalEndpoint makes them) are held to it too, a
        // document at a time: the rest of the batch is written.
        let results = try await small.bulkDocs([
            DocumentUpload(["_id": "a", "_rev": "1-aaa", "v": 1]),
            DocumentUpload(["_id": "huge", "_rev": "1-bbb", "t": .string(String(repeating: "y", count: 5000))]),
            DocumentUpload(["_id": "c", "_rev": "1-ccc", "v": 3]),
        ], newEdits: false)
        XCTAssertEqual(results.map(\.id), ["a", "huge", "c"])
        XCTAssertEqual(results.map { $0.result.failureError }, [nil, StoreError.documentTooLarge(id: "huge"), nil])
        XCTAssertThrowsError(try small.document(id: "huge")) { XCTAssertEqual($0 as? StoreError, .notFound()) }
        XCTAssertEqual(try small.info().docCount, 4)
    }
}

extension Result {
    var failureError: Failure? { if case .failure(let error) = self { error } else { nil } }
}

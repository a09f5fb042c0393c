import Foundation
import XCTest
@testable import Store

/// Content-addressed attachment files referenced by revisions.
final class AttachmentTests: DatabaseTestCase {
    private func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.file("test.sqlite.attachments"))) ?? []).filter { $0.count == 64 }
    }

    func testInlineAttachmentStubsAndDeduplication() async throws {
        let bytes: [UInt8] = Array("hello attachment".utf8)
        let first = try await database.put(.object([
            "_id": "a",
            "_attachments": ["greeting.txt": ["content_type": "text/plain", "data": .string(Data(bytes).base64EncodedString())]],
        ])).revision
        let attachment = try database.attachment(documentID: "a", name: "greeting.txt")
        XCTAssertEqual(attachment.length, bytes.count)
        XCTAssertEqual(attachment.revpos, 1)
        XCTAssertEqual(attachment.contentType, "text/plain")
        XCTAssertEqual(attachment.digest, "md5-" + Data(Insecure_md5(bytes)).base64EncodedString())
        XCTAssertEqual(try database.attachmentContent(attachment), bytes)

        // A stub keeps the attachment into the next revision, revpos unchanged.
        let second = try await database.put(.object([
            "_id": "a", "_rev": .string(first.description), "v": 2,
            "_attachments": ["greeting.txt": ["stub": true]],
        ])).revision
        XCTAssertEqual(try database.attachment(documentID: "a", name: "greeting.txt", revision: second).revpos, 1)

        // Same content in another document shares the file.
        try await database.put(.object(["_id": "b", "_attachments": ["copy": ["data": .string(Data(bytes).base64EncodedString())]]]))
        XCTAssertEqual(files().count, 1)

        // A stub for an attachment the parent lacks is refused.
        await assertRefused("missing_stub") {
            try await self.database.put(.object(["_id": "a", "_rev": .string(second.description), "_attachments": ["nope": ["stub": true]]]))
        }

        let rendered = try database.document(id: "a").json()
        XCTAssertEqual(rendered["_attachments"]?["greeting.txt"]?["stub"], true)
        XCTAssertEqual(rendered["_attachments"]?["greeting.txt"]?["length"], .number(Double(bytes.count)))
    }

    func testLargeAttachmentIsStreamedToItsFile() async throws {
        let chunk = [UInt8](repeating: 7, count: 1 << 20)
        let chunks = AsyncStream<[UInt8]> { continuation in
            for index in 0..<20 { continuation.yield(chunk.map { $0 &+ UInt8(index) }) }
            continuation.finish()
        }
        let staged = try await database.stageAttachment(chunks, limit: 64 << 20)
        XCTAssertEqual(staged.length, 20 << 20)
        let revision = try await database.put(.object([
            "_id": "big", "_attachments": ["blob.bin": ["follows": true, "content_type": "application/octet-stream", "length": .number(Double(staged.length))]],
        ]), staged: ["blob.bin": staged]).revision
        let attachment = try database.attachment(documentID: "big", name: "blob.bin", revision: revision)
        let attributes = try FileManager.default.attributesOfItem(atPath: database.attachmentPath(attachment))
        XCTAssertEqual(attributes[.size] as? Int, 20 << 20)
        let content = try database.attachmentContent(attachment)
        XCTAssertEqual(content[5 << 20], 12)

        let tooBig = AsyncStream<[UInt8]> { continuation in
            for _ in 0..<3 { continuation.yield(chunk) }
            continuation.finish()
        }
        do {
            _ = try await database.stageAttachment(tooBig, limit: 2 << 20)
            XCTFail("limit not enforced")
        } catch let error as StoreError {
            XCTAssertEqual(error.kind, .tooLarge)
        }
    }

    func testContentOfManyBatchesIsHashedWholeAndInOrder() async throws {
        // Odd-sized chunks across several of the writer's batches: all but the first are hashed
        // on the digests' own threads while the file is written.
        let content = (0..<(5 * AttachmentWriter.batchSize + 12_345)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 13) }
        let chunks = AsyncStream<ArraySlice<UInt8>> { continuation in
            for start in stride(from: 0, to: content.count, by: 100_003) { continuation.yield(content[start..<min(start + 100_003, content.count)]) }
            continuation.finish()
        }
        let staged = try await database.stageAttachment(chunks, limit: 64 << 20)
        XCTAssertEqual(staged.length, content.count)
        XCTAssertEqual(staged.digest, "md5-" + Data(Insecure_md5(content)).base64EncodedString())
        XCTAssertEqual(staged.key, SHA256.hash(data: content).map { String(format: "%02x", $0) }.joined())
        XCTAssertEqual(FileManager.default.contents(atPath: database.stagedPath(staged)).map { [UInt8]($0) }, content)

        // Content declared with the digest of other bytes (one bit differs, in the last batch) is refused, and nothing is stored.
        var altered = content
        altered[content.count - 10] ^= 1
        await assertRefused("content_md5_mismatch") {
            try await self.database.put(.object([
                "_id": "big", "_attachments": ["blob.bin": ["follows": true, "digest": .string("md5-" + Data(Insecure_md5(altered)).base64EncodedString())]],
            ]), staged: ["blob.bin": staged])
        }
        XCTAssertThrowsError(try database.document(id: "big")) { XCTAssertEqual($0 as? StoreError, .notFound()) }
        database.discardStaged(staged)
        try await database.compact()
        XCTAssertEqual(files(), [], "unreferenced and unpinned, the file goes at compaction")
    }

    func testCompactionDeletesOrphanedFilesOnly() async throws {
        let first = try await database.put(.object(["_id": "a", "_attachments": ["x": ["data": .string(Data([1, 2, 3]).base64EncodedString())]]])).revision
        try await database.put(.object(["_id": "b", "_attachments": ["y": ["data": .string(Data([4, 5, 6]).base64EncodedString())]]]))
        try await database.put(.object(["_id": "a", "_rev": .string(first.description), "v": 2]))
        XCTAssertEqual(files().count, 2)
        try await database.compact()
        XCTAssertEqual(files().count, 1, "the file only the old revision used is gone")
        XCTAssertEqual(try database.attachmentContent(database.attachment(documentID: "b", name: "y")), [4, 5, 6])
    }
}

import Crypto

private func Insecure_md5(_ bytes: [UInt8]) -> [UInt8] { Array(Insecure.MD5.hash(data: bytes)) }

import Foundation
import JSON
import Store
@testable import SyncAgent
import XCTest

/// An upload that fails after some of its attachments reached their files
/// lets go of them: compaction then deletes them.
final class ListenerStagedAttachmentTests: XCTestCase {
    private func contentFiles(_ server: TestListener) -> [String] {
        let folder = server.directory + "/db.sqlite.attachments"
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.count == 64 }
    }

    func testFailedUploadsLeaveNoFileBehindAfterCompaction() async throws {
        let server = try await startListener { $0.maximumAttachmentSize = 1000 }
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        let type = [("Content-Type", "multipart/related; boundary=\"abc\"")]
        func related(_ parts: [(String, [UInt8])]) -> [UInt8] {
            let follows = JSON.object(JSON.Object(parts.map { (key: $0.0, value: ["follows": true] as JSON) }))
            var body = Array("--abc\r\nContent-Type: application/json\r\n\r\n".utf8) + JSON.object(["_attachments": follows]).serializedBytes()
            for (name, bytes) in parts {
                body += Array("\r\n--abc\r\nContent-Disposition: attachment; filename=\"\(name)\"\r\n\r\n".utf8) + bytes
            }
            return body + Array("\r\n--abc--".utf8)
        }
        // The second part is over the limit: the first is already in its file.
        let tooLarge = try await HTTP.request(.PUT, server.url + "/db/a", body: related([("one", Array("first".utf8)), ("two", [UInt8](repeating: 2, count: 5000))]), headers: type)
        XCTAssertEqual(tooLarge.status, 413, tooLarge.text)
        // Every part is stored, then the query is refused before the write.
        let badQuery = try await HTTP.request(.PUT, server.url + "/db/b?new_edits=maybe", body: related([("one", Array("second".utf8))]), headers: type)
        XCTAssertEqual(badQuery.status, 400, badQuery.text)
        // A standalone attachment refused the same way.
        let standalone = try await HTTP.request(.PUT, server.url + "/db/c/file.txt?new_edits=maybe", body: Array("third".utf8))
        XCTAssertEqual(standalone.status, 400, standalone.text)

        XCTAssertEqual(contentFiles(server).count, 3)
        try await server.catalog.database("db").compact()
        XCTAssertEqual(contentFiles(server), [], "no failed upload holds its files")
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db").json["doc_count"], 0)
    }

    func testADocumentWithMoreAttachmentsThanAPeerCouldTakeIsRefusedWith413() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        var attachments = JSON.Object()
        for index in 0...Database.maximumAttachments { attachments["a\(index)"] = ["content_type": "text/plain", "data": "Yg=="] }
        let refused = try await HTTP.json(.PUT, server.url + "/db/many", ["_attachments": .object(attachments)])
        XCTAssertEqual(refused.status, 413)
        XCTAssertEqual(refused.json, ["error": "too_large", "reason": .string("A document may have at most \(Database.maximumAttachments) attachments.")])
        try await assertEqual(try await HTTP.json(.GET, server.url + "/db/many").status, 404)
    }
}

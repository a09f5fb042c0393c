import Foundation
import JSON
import Store
@testable import SyncAgent
import TestBed
import XCTest

/// A disk that fills while an attachment arrives: the upload gets 507 `insufficient_storage`,
/// no file of it is left, and the database stays readable and takes later writes.
///
/// The data directory is an 8 MiB tmpfs the test mounts, so it needs root (skipped otherwise).
final class ListenerDiskFullTests: XCTestCase {
    /// Mounts a `size` tmpfs on a new directory, unmounted (and removed) when the test ends,
    /// after the listener started later has stopped. Skips the test where it cannot.
    private func smallDisk(size: String) throws -> String {
        guard let disk = SmallDisk(size: size) else { throw XCTSkip("mounting a tmpfs needs root") }
        addTeardownBlock { disk.remove() }
        return disk.path
    }

    private func files(in folder: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    }

    func testAttachmentLargerThanTheFreeSpaceIs507AndLeavesNothing() async throws {
        let disk = try smallDisk(size: "8m")
        let server = try await startListener(directory: disk)
        let db = server.url + "/db"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        let kept = try await HTTP.json(.PUT, db + "/kept", ["v": 1])
        XCTAssertEqual(kept.status, 201)
        let attachments = disk + "/db.sqlite.attachments"

        let film = [UInt8](repeating: 9, count: 16 << 20)
        let full = try await HTTP.request(.PUT, db + "/film/film.mp4", body: film, headers: [("Content-Type", "video/mp4")])
        XCTAssertEqual(full.status, 507, full.text)
        XCTAssertEqual(full.json["error"], "insufficient_storage", full.text)
        XCTAssertTrue(full.json["reason"]?.stringValue?.contains("No space left on device") == true, full.text)
        XCTAssertEqual(files(in: attachments + "/tmp"), [], "no partial file is left in the staging folder")
        XCTAssertEqual(files(in: attachments).filter { $0 != "tmp" }, [], "no file is stored")

        // Nothing else is lost, and the space is there again for a write that fits.
        try await assertEqual(try await HTTP.json(.GET, db + "/kept").json["v"], 1)
        try await assertEqual(try await HTTP.json(.GET, db + "/film").status, 404)
        let info = try await HTTP.json(.GET, db)
        XCTAssertEqual(info.json["doc_count"], 1)
        XCTAssertEqual(info.json["update_seq"], 1)
        let note = Array("a small note".utf8)
        let small = try await HTTP.request(.PUT, db + "/note/note.txt", body: note, headers: [("Content-Type", "text/plain")])
        XCTAssertEqual(small.status, 201, small.text)
        try await assertEqual(try await HTTP.request(.GET, db + "/note/note.txt").body, note)
        try await assertEqual(try await HTTP.json(.GET, db).json["doc_count"], 2)
    }
}

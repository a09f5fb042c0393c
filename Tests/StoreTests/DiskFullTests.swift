import Foundation
import JSON
import TestBed
import XCTest
@testable import Store

/// A disk that fills under the store: SQLite's `SQLITE_FULL` and a full attachment file are
/// `insufficient_storage` (507), distinct from other failures, and nothing written before is lost.
///
/// Each test mounts a small tmpfs, so it needs root (skipped otherwise).
final class DiskFullTests: XCTestCase {
    /// Mounts a `size` tmpfs on a new directory, unmounted and removed when the test ends.
    private func smallDisk(size: String) throws -> SmallDisk {
        guard let disk = SmallDisk(size: size) else { throw XCTSkip("mounting a tmpfs needs root") }
        addTeardownBlock { disk.remove() }
        return disk
    }

    /// Fills the disk holding `path` with a file there, until a write is refused.
    private func fill(_ path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        defer { close(descriptor) }
        let block = [UInt8](repeating: 0, count: 64 << 10)
        while write(descriptor, block, block.count) > 0 {}
        XCTAssertEqual(errno, ENOSPC)
    }

    func testDatabaseThatCannotGrowRefusesTheWriteWithInsufficientStorage() async throws {
        let disk = try smallDisk(size: "2m")
        let database = try Database.open(path: disk.file("db.sqlite"), name: "db")
        defer { database.close() }
        try await database.put(["_id": "kept", "v": 1])
        try fill(disk.file("filler"))

        let text = JSON.string(String(repeating: "t", count: 16 << 10))
        var written = 0
        var refusal: StoreError?
        while refusal == nil, written < 1000 {
            do {
                try await database.put(["_id": .string("doc\(written)"), "t": text])
                written += 1
            } catch {
                refusal = error
            }
        }
        XCTAssertEqual(refusal?.kind, .insufficientStorage, "\(String(describing: refusal))")
        XCTAssertEqual(refusal?.error, "insufficient_storage")

        // Everything committed before is there; the refused write is not.
        XCTAssertEqual(try database.document(id: "kept").body["v"], 1)
        XCTAssertEqual(try database.info().docCount, written + 1)
        for index in 0..<written { XCTAssertEqual(try database.document(id: "doc\(index)").body["t"], text) }
        XCTAssertThrowsError(try database.document(id: "doc\(written)")) { XCTAssertEqual($0 as? StoreError, .notFound()) }

        // With room again, the same database takes writes.
        unlink(disk.file("filler"))
        try await database.put(["_id": "after", "v": 2])
        XCTAssertEqual(try database.info().docCount, written + 2)
    }

    func testAttachmentThatDoesNotFitIsInsufficientStorageAndLeavesNoFile() async throws {
        let disk = try smallDisk(size: "2m")
        let database = try Database.open(path: disk.file("db.sqlite"), name: "db")
        defer { database.close() }
        let folder = disk.file("db.sqlite.attachments")
        let chunks = AsyncStream<[UInt8]> { continuation in
            for _ in 0..<64 { continuation.yield([UInt8](repeating: 5, count: 64 << 10)) }  // 4 MiB
            continuation.finish()
        }
        do {
            let staged = try await database.stageAttachment(chunks, limit: 1 << 30)
            XCTFail("4 MiB staged on a 2 MiB disk: \(staged)")
        } catch let error as StoreError {
            XCTAssertEqual(error.kind, .insufficientStorage, error.description)
            XCTAssertTrue(error.reason.contains("No space left on device"), error.reason)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder + "/tmp"), [])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0 != "tmp" }, [])
        let small = try database.stageAttachment(Array("fits".utf8))
        try await database.put(["_id": "doc", "_attachments": ["a.txt": ["follows": true]]], staged: ["a.txt": small])
        XCTAssertEqual(try database.document(id: "doc").attachments.first?.length, 4)
    }
}

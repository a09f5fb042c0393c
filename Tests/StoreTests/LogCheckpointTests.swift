import Foundation
import XCTest
@testable import Store

/// Checkpoints of the write-ahead log, which run beside the writer.
final class LogCheckpointTests: DatabaseTestCase {
    /// Under a steady load the pages reach the database file while it is open,
    /// and the log starts afresh instead of growing with everything written.
    func testLogIsCheckpointedAndRestartedUnderSteadyWrites() async throws {
        let path = database.path
        let filler = String(repeating: "x", count: 2000)
        let batches = 20
        for batch in 0..<batches {
            let uploads = (0..<1000).map { index in
                DocumentUpload(["_id": .string("doc-\(batch)-\(index)"), "filler": .string(filler)])
            }
            let results = try await database.bulkDocs(uploads)
            XCTAssertTrue(results.allSatisfy { (try? $0.result.get()) != nil })
        }
        let written = batches * 1000 * filler.utf8.count
        let pageBytes = 4096
        // Give the last background checkpoint time to finish.
        for _ in 0..<100 where fileSize(path) < written / 2 { try await Task.sleep(for: .milliseconds(50)) }
        XCTAssertGreaterThan(fileSize(path), written / 2, "checkpoints copied little into the database file")
        let logBound = (LogCheckpointer.limit + 2 * LogCheckpointer.interval) * pageBytes
        XCTAssertLessThan(logBound, written, "the test writes too little to show the log restarting")
        XCTAssertLessThan(fileSize(path + "-wal"), logBound, "the log was never started afresh")
        XCTAssertEqual(try database.info().docCount, batches * 1000)
    }

    /// Less than a checkpoint's worth of pages still reaches the database file
    /// once the writer falls idle, so readers need not look pages up in the log.
    func testIdleWriterLeavesNothingInTheLog() async throws {
        let path = database.path
        let before = fileSize(path)
        let filler = String(repeating: "y", count: 2000)
        let uploads = (0..<400).map { DocumentUpload(["_id": .string("doc-\($0)"), "filler": .string(filler)]) }
        _ = try await database.bulkDocs(uploads)
        let written = uploads.count * filler.utf8.count
        XCTAssertLessThan(written / 4096, LogCheckpointer.interval, "the test should write less than a checkpoint's worth")
        for _ in 0..<100 where fileSize(path) - before < written / 2 { try await Task.sleep(for: .milliseconds(50)) }
        XCTAssertGreaterThan(fileSize(path) - before, written / 2, "the log was not checkpointed when the writer fell idle")
    }

    private func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }
}

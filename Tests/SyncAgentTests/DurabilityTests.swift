import Foundation
import Store
import XCTest

/// A checkpoint never names data a power cut can take away. The store appends commits to
/// its log without waiting for the disk (`synchronous=NORMAL`), so the replicator has the
/// target wait for the disk before each checkpoint, and `_ensure_full_commit` waits for it.
/// What reaches the disk, and when, is read from `strace` around a real `syncd`.
final class DurabilityTests: XCTestCase {
    /// Between the target's document writes and the checkpoint written after them (a
    /// `_local` document, the target's last write), the target's log reaches the disk.
    func testTheTargetsLogIsSyncedBeforeTheCheckpointIsWritten() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-durable")
        defer { directory.remove() }
        do {
            let catalog = try Catalog(directory: directory.path)
            defer { catalog.close() }
            let source = try catalog.create("src")
            for n in 0..<20 { try await source.put(["_id": .string("doc\(n)"), "n": .number(Double(n))]) }
            _ = try catalog.create("copy")
        }
        let trace = SystemCallTrace(["pwrite64", "fsync", "fdatasync"], in: directory.path)
        let replicate = try ReplicateProcess(["replicate", "src", "copy", "--data", directory.path],
                                             captureErrors: true, launcher: trace.launcher)
        let (status, output) = await replicate.finish()
        XCTAssertEqual(status, 0, output + replicate.errors)
        XCTAssertTrue(output.hasSuffix("written 20\n"), output)
        let log = directory.path + "/copy.sqlite-wal"
        // Frames only: SQLite syncs the log's 32-byte header as it writes it, before any frame.
        let lines = trace.lines
        let writes = trace.indexes(of: "pwrite64", on: log).filter { !lines[$0].hasSuffix(", 32, 0) = 32") }
        let syncs = trace.indexes(of: "sync", on: log)
        let shown = "strace:\n" + lines.joined(separator: "\n")
        guard let first = writes.first, let last = writes.last else { return XCTFail("nothing written to the target's log; " + shown) }
        XCTAssertTrue(syncs.contains { first < $0 && $0 < last }, "the target's log is not synced before the checkpoint; " + shown)
    }

    /// `POST /db/_ensure_full_commit` answers only once the database's log is on disk.
    func testEnsureFullCommitWaitsForTheLog() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-durable")
        defer { directory.remove() }
        try ServeProcess.addAdmin(to: directory.path)
        let server = try await ServeProcess.start(["--port", "0", "--data", directory.path])
        defer { Task { await server.stop() } }
        let trace = SystemCallTrace(["fsync", "fdatasync"], in: directory.path)
        let strace = try trace.attach(to: server.process.processIdentifier)
        let db = server.adminURL + "/durable"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        try await assertEqual(try await HTTP.json(.PUT, db + "/doc", ["n": 1]).status, 201)
        let log = directory.path + "/durable.sqlite-wal"
        let before = trace.indexes(of: "sync", on: log).count
        try await assertEqual(try await HTTP.json(.POST, db + "/_ensure_full_commit", [:]).status, 201)
        XCTAssertGreaterThan(trace.indexes(of: "sync", on: log).count, before,
                             "the log is not synced; strace:\n" + trace.lines.joined(separator: "\n"))
        await server.stop()
        strace.waitUntilExit()
    }
}

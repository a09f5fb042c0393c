import Foundation
import JSON
import Synchronization
import XCTest
@testable import Store

/// Attachment files are never lost to compaction and never leaked by a failed
/// write, and they reach the disk before a revision can name them.
final class AttachmentFileTests: DatabaseTestCase {
    private var folder: String { directory.file("test.sqlite.attachments") }

    private func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.count == 64 }
    }

    private func temporaryFiles() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: folder + "/tmp")) ?? []
    }

    /// The files this process holds open in the temporary folder.
    private func openTemporaryFiles() -> [String] {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
            .filter { $0.hasPrefix(folder + "/tmp/") }
    }

    private static func base64(_ text: String) -> JSON { .string(Data(text.utf8).base64EncodedString()) }

    func testCompactionRunningAlongsideWritesNeverDeletesTheirFiles() async throws {
        // Other files make the folder long, so each compaction takes a while to list it.
        for index in 0..<20_000 {
            _ = FileManager.default.createFile(atPath: folder + "/" + String(format: "filler-%056x", index), contents: nil)
        }
        let writers = 4, perWriter = 250
        let database = self.database!
        final class Rounds: Sendable {
            let finished = Atomic<Int>(0)
        }
        let rounds = Rounds()
        let compacting = Task {
            while !Task.isCancelled {
                try await database.compact()
                rounds.finished.add(1, ordering: .relaxed)
            }
            return rounds.finished.load(ordering: .relaxed)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    // Content is staged while other writers' documents are being written, then
                    // written in a batch: inline (staged during the write's checks) or staged before.
                    for batch in stride(from: 0, to: perWriter, by: 25) {
                        // The last batches wait for two whole compactions, so however fast the
                        // writes run, compaction has run beside them.
                        if batch + 25 >= perWriter {
                            let deadline = ContinuousClock.now + .seconds(60)
                            while rounds.finished.load(ordering: .relaxed) < 2 && ContinuousClock.now < deadline {
                                try await Task.sleep(for: .milliseconds(10))
                            }
                        }
                        var uploads: [DocumentUpload] = []
                        for index in batch..<batch + 25 {
                            let content = "content of \(writer)-\(index)"
                            let id = JSON.string("\(writer)-\(index)")
                            if index % 2 == 0 {
                                uploads.append(DocumentUpload(.object(["_id": id, "_attachments": ["a": ["data": Self.base64(content)]]])))
                            } else {
                                let staged = try database.stageAttachment(Array(content.utf8))
                                uploads.append(DocumentUpload(.object(["_id": id, "_attachments": ["a": ["follows": true]]]), staged: ["a": staged]))
                            }
                        }
                        for result in try await database.bulkDocs(uploads) { _ = try result.result.get() }
                    }
                }
            }
            try await group.waitForAll()
        }
        compacting.cancel()
        let finished = try await compacting.value
        XCTAssertGreaterThan(finished, 1)
        try await database.compact()
        var unreadable: [String] = []
        for writer in 0..<writers {
            for index in 0..<perWriter {
                let attachment = try database.attachment(documentID: "\(writer)-\(index)", name: "a")
                if (try? database.attachmentContent(attachment)) != Array("content of \(writer)-\(index)".utf8) { unreadable.append("\(writer)-\(index)") }
            }
        }
        XCTAssertEqual(unreadable, [], "attachments lost to compaction")
        XCTAssertEqual(files().count, writers * perWriter, "every referenced file is there")
    }

    func testReplicatedWritesThatFailPartWayReleaseTheirFiles() async throws {
        let history: JSON = ["start": 1, "ids": ["abc"]]
        let results = try await database.bulkDocs([
            // The second attachment is refused after the first was written to its file.
            DocumentUpload(.object(["_id": "x", "_rev": "1-abc", "_revisions": history,
                                    "_attachments": ["a": ["data": Self.base64("first of x")], "b": ["content_type": "text/plain"]]])),
            // Refused after its attachment was written: no revision with new_edits=false.
            DocumentUpload(.object(["_id": "y", "_attachments": ["a": ["data": Self.base64("only of y")]]])),
        ], newEdits: false)
        XCTAssertTrue(results.allSatisfy { (try? $0.result.get()) == nil })
        XCTAssertEqual(files().count, 2)
        try await database.compact()
        XCTAssertEqual(files(), [], "nothing refers to the files of refused writes")
    }

    func testDiscardingStagedContentTwiceKeepsAnotherUploadsPin() async throws {
        let content = Array("the same content".utf8)
        let abandoned = try database.stageAttachment(content)
        let kept = try database.stageAttachment(content)
        database.discardStaged(abandoned)
        database.discardStaged(abandoned)
        try await database.compact()
        try await database.put(.object(["_id": "doc", "_attachments": ["a": ["follows": true]]]), staged: ["a": kept])
        database.discardStaged(kept)
        let attachment = try database.attachment(documentID: "doc", name: "a")
        XCTAssertEqual(try database.attachmentContent(attachment), content)
    }

    func testAFailedWriteClosesAndRemovesItsTemporaryFile() throws {
        // A file size limit makes write(2) fail with EFBIG part-way through the content.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
        let saved = limit
        let previousHandler = signal(SIGXFSZ, SIG_IGN)
        defer {
            var restored = saved
            setrlimit(Int32(RLIMIT_FSIZE.rawValue), &restored)
            signal(SIGXFSZ, previousHandler)
        }
        limit.rlim_cur = 4 << 20
        setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
        XCTAssertThrowsError(try database.stageAttachment([UInt8](repeating: 1, count: 8 << 20))) {
            XCTAssertEqual($0 as? StoreError, .internal("cannot write attachment: " + String(cString: strerror(EFBIG))))
        }
        var restored = saved
        setrlimit(Int32(RLIMIT_FSIZE.rawValue), &restored)
        XCTAssertEqual(temporaryFiles(), [])
        XCTAssertEqual(openTemporaryFiles(), [])
    }

    func testTemporaryFilesLeftByACrashAreRemovedOnOpen() async throws {
        database.close()
        _ = FileManager.default.createFile(atPath: folder + "/tmp/left-by-a-crash", contents: Data(repeating: 9, count: 1000))
        // A file a writer still holds (its lock, here on an open file description of this process) stays.
        _ = FileManager.default.createFile(atPath: folder + "/tmp/being-written", contents: Data())
        let writing = open(folder + "/tmp/being-written", O_RDONLY)
        defer { close(writing) }
        XCTAssertEqual(flock(writing, LOCK_EX | LOCK_NB), 0)
        database = try Database.open(path: directory.file("test.sqlite"), name: "test")
        XCTAssertEqual(temporaryFiles(), ["being-written"])
    }

    func testAttachmentFileIsSyncedBeforeItsRenameAndTheFolderAfter() throws {
        // Trace this process's fsync and rename calls while content is stored.
        let trace = directory.file("strace.log")
        let tracer = Process()
        tracer.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        tracer.arguments = ["-f", "-y", "-qq", "-e", "trace=fsync,fdatasync,rename,renameat,renameat2", "-o", trace, "-p", String(getpid())]
        try tracer.run()
        while !Self.isTraced() && tracer.isRunning { usleep(10_000) }
        XCTAssertTrue(Self.isTraced(), "strace did not attach")
        let staged = try database.stageAttachment(Array("durable content".utf8))
        tracer.interrupt()
        tracer.waitUntilExit()

        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map(String.init)
        let log = "strace:\n" + lines.joined(separator: "\n")
        guard let rename = lines.firstIndex(where: { $0.contains("rename") && $0.contains(", \"" + folder + "/" + staged.key + "\"") }),
              let temporary = lines[rename].split(separator: "\"").dropFirst().first.map(String.init), temporary.contains("/tmp/")
        else { return XCTFail("no rename to the content address; " + log) }
        func synced(_ path: String) -> (String) -> Bool { { $0.contains("sync(") && $0.contains("<" + path + ">") && $0.hasSuffix("= 0") } }
        XCTAssertNotNil(lines[..<rename].firstIndex(where: synced(temporary)), "the file is not synced before its rename; " + log)
        XCTAssertNotNil(lines[rename...].firstIndex(where: synced(folder)), "the folder is not synced after the rename; " + log)
    }

    private static func isTraced() -> Bool {
        let status = (try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)) ?? ""
        return status.split(separator: "\n").contains { $0.hasPrefix("TracerPid:") && $0.split(separator: "\t").last != "0" }
    }
}

import Foundation
import XCTest
@testable import Store

/// Kills a writing process with SIGKILL at random moments and checks that
/// every write it had acknowledged survives, and nothing is half written.
final class CrashRecoveryTests: XCTestCase {
    func testAcknowledgedWritesSurviveSIGKILL() throws {
        let directory = TemporaryDirectory("crash")
        defer { directory.remove() }
        let path = directory.file("crash.sqlite")
        let writer = productsDirectory.appendingPathComponent("store-crash-writer").path
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: writer), "missing \(writer)")

        var acknowledged: [String: RevisionID] = [:]
        var generator = SystemRandomNumberGenerator()
        for run in 0..<25 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: writer)
            process.arguments = [path, "r\(run)"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            // Let it write for a random while (longer now and then), then kill it mid-stream.
            usleep(UInt32.random(in: 30_000...(run % 5 == 0 ? 600_000 : 200_000), using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationReason, .uncaughtSignal, "the writer stopped before it was killed")
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            for line in text.split(separator: "\n") where line.hasPrefix("doc ") {
                let parts = line.split(separator: " ")
                // A line cut by the kill has no complete revision: skip it.
                guard parts.count == 3, let revision = RevisionID(parts[2]), revision.digest.count == 32 else { continue }
                let id = String(parts[1])
                if let previous = acknowledged[id], previous.generation > revision.generation { continue }
                acknowledged[id] = revision
            }

            let database = try Database.open(path: path)
            defer { database.close() }
            try verify(database, acknowledged)
        }
        XCTAssertGreaterThan(acknowledged.count, 500, "too few writes were acknowledged to prove anything")
    }

    private func verify(_ database: Database, _ acknowledged: [String: RevisionID]) throws {
        for (id, revision) in acknowledged {
            let document = try database.document(id: id)
            XCTAssertGreaterThanOrEqual(document.revision.generation, revision.generation, "\(id) lost acknowledged revision \(revision)")
            XCTAssertTrue(document.history.contains(revision) || document.history.count >= 1000, "\(id): \(revision) not in its history")
        }
        // Every stored tree decodes, every winner has a body, and the counts agree with the rows.
        let page = try database.allDocs(AllDocsOptions())
        let info = try database.info()
        XCTAssertEqual(page.rows.count, info.docCount)
        XCTAssertEqual(page.totalRows, info.docCount)
        var changes = ChangesOptions()
        changes.includeDocuments = true
        let feed = try database.changes(changes)
        XCTAssertEqual(feed.changes.count, info.docCount + info.deletedDocCount)
        XCTAssertEqual(feed.lastSequence, info.updateSequence)
        XCTAssertEqual(Set(feed.changes.map(\.sequence)).count, feed.changes.count)
        for change in feed.changes { XCTAssertNotNil(change.document, "\(change.id) has no readable winner") }
    }
}

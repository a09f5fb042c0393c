import Foundation
import XCTest
@testable import Store

/// The store stays correct when another process commits to its file while it
/// has the file open: no sequence is issued twice, the counts stay true.
final class SharedFileTests: XCTestCase {
    func testWritesInterleavedWithAnotherProcessKeepSequencesAndCountsTrue() async throws {
        let directory = TemporaryDirectory("shared")
        defer { directory.remove() }
        let path = directory.file("shared.sqlite")
        let database = try Database.open(path: path)
        defer { database.close() }
        _ = try await database.put(json(#"{"_id":"before"}"#))

        let writer = productsDirectory.appendingPathComponent("store-crash-writer").path
        for round in 0..<3 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: writer)
            process.arguments = [path, "other\(round)"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            defer {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            // Both write at once for a while: this process between the other's commits.
            for index in 0..<20 {
                _ = try await database.put(json(#"{"_id":"mine-\#(round)-\#(index)"}"#))
                try await Task.sleep(for: .milliseconds(5))
            }
            _ = try await database.put(json(#"{"_id":"after-\#(round)"}"#))
        }

        let changes = try database.changes(ChangesOptions()).changes
        let sequences = changes.map(\.sequence)
        XCTAssertEqual(Set(sequences).count, sequences.count, "a sequence was issued twice")
        XCTAssertEqual(sequences, sequences.sorted())
        let info = try database.info()
        XCTAssertEqual(info.updateSequence, sequences.max())
        let rows = try database.allDocs(AllDocsOptions()).rows.count
        XCTAssertEqual(info.docCount, rows, "the document count went stale")
        XCTAssertGreaterThan(rows, 1 + 3 * 21 + 100, "the other process wrote too little to prove anything")
    }
}

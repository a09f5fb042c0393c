import Foundation
import XCTest
@testable import Store

/// The store stays correct when another connection (another process, as a
/// second syncd would be) commits to its file while it has the file open: no
/// sequence is issued twice, and the counts stay true.
final class SharedFileTests: XCTestCase {
    func testWritesInterleavedWithAnotherWriterKeepSequencesAndCountsTrue() async throws {
        let directory = TemporaryDirectory("shared")
        defer { directory.remove() }
        let path = directory.file("shared.sqlite")
        let mine = try Database.open(path: path)
        defer { mine.close() }
        let other = try Database.open(path: path)
        defer { other.close() }
        for index in 0..<50 {
            _ = try await mine.put(json(#"{"_id":"mine-\#(index)"}"#))
            _ = try await other.put(json(#"{"_id":"other-\#(index)"}"#))
            _ = try await other.put(json(#"{"_id":"other-more-\#(index)"}"#))
        }
        let deleted = try mine.document(id: "other-3")
        _ = try await mine.put(json(#"{"_id":"other-3","_rev":"\#(deleted.revision)","_deleted":true}"#))

        for database in [mine, other] {
            let changes = try database.changes(ChangesOptions()).changes
            let sequences = changes.map(\.sequence)
            XCTAssertEqual(Set(sequences).count, sequences.count, "a sequence was issued twice")
            XCTAssertEqual(sequences, sequences.sorted())
            let info = try database.info()
            XCTAssertEqual(info.updateSequence, 151)
            XCTAssertEqual(info.docCount, 149, "the document count went stale")
            XCTAssertEqual(info.deletedDocCount, 1)
            XCTAssertEqual(try database.allDocs(AllDocsOptions()).rows.count, 149)
        }
    }
}

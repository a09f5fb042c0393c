import Foundation
import XCTest
@testable import Store

/// Pruning, compaction, purge and expiration.
final class HousekeepingTests: DatabaseTestCase {
    func testRevsLimitPrunesHistory() async throws {
        try await database.setRevsLimit(5)
        var revision = try await database.put(["_id": "a", "v": 0]).revision
        for value in 1..<20 {
            revision = try await database.put(["_id": "a", "_rev": .string(revision.description), "v": .number(Double(value))]).revision
        }
        let document = try database.document(id: "a")
        XCTAssertEqual(document.revision.generation, 20)
        XCTAssertEqual(document.history.count, 5)
        XCTAssertEqual(try database.revsLimit(), 5)
    }

    func testCompactionDropsNonLeafBodies() async throws {
        let first = try await database.put(["_id": "a", "v": 1]).revision
        let second = try await database.put(["_id": "a", "_rev": .string(first.description), "v": 2]).revision
        XCTAssertNoThrow(try database.document(id: "a", revision: first))
        try await database.compact()
        await assertRefused("not_found") { try self.database.document(id: "a", revision: first) }
        XCTAssertEqual(try database.document(id: "a").revision, second)
        XCTAssertEqual(try database.document(id: "a").availability, [.available, .missing])
    }

    func testPurgeRemovesALeafOrTheWholeDocument() async throws {
        _ = try await database.put(json(#"{"_id":"d","_rev":"2-bb","_revisions":{"start":2,"ids":["bb","aa"]},"v":"b"}"#), newEdits: false)
        _ = try await database.put(json(#"{"_id":"d","_rev":"2-cc","_revisions":{"start":2,"ids":["cc","aa"]},"v":"c"}"#), newEdits: false)
        let purged = try await database.purge([("d", [RevisionID("2-cc")!])])
        XCTAssertEqual(purged.first?.purged, [RevisionID("2-cc")!])
        XCTAssertEqual(try database.document(id: "d").revision, RevisionID("2-bb"))
        XCTAssertTrue(try database.document(id: "d").conflicts.isEmpty)
        try await database.purge([("d", [RevisionID("2-bb")!])])
        await assertRefused("not_found") { try self.database.document(id: "d") }
        XCTAssertEqual(try database.info().docCount, 0)
        XCTAssertTrue(try database.changes(ChangesOptions()).changes.isEmpty)
    }

    func testExpiredDocumentsArePurged() async throws {
        try await database.put(["_id": "soon"])
        try await database.put(["_id": "later"])
        try await database.setExpiration(id: "soon", at: Date().addingTimeInterval(0.3))
        try await database.setExpiration(id: "later", at: Date().addingTimeInterval(3600))
        XCTAssertNotNil(try database.expiration(id: "soon"))
        // The database's own sweeper purges it when the time comes.
        let deadline = Date().addingTimeInterval(10)
        while (try? database.document(id: "soon")) != nil, Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        await assertRefused("not_found") { try self.database.document(id: "soon") }
        XCTAssertNoThrow(try database.document(id: "later"))
        XCTAssertEqual(try database.info().docCount, 1)
    }
}

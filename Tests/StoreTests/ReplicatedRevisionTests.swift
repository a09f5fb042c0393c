import JSON
import XCTest
@testable import Store

/// Writing existing revisions with their history (`new_edits=false`), as replication does.
final class ReplicatedRevisionTests: DatabaseTestCase {
    private func insert(_ id: String, _ history: [String], deleted: Bool = false, body: JSON.Object = [:]) async throws {
        var object = body
        object["_id"] = .string(id)
        object["_rev"] = .string(history[0])
        let start = RevisionID(history[0])!.generation
        object["_revisions"] = ["start": .number(Double(start)), "ids": .array(history.map { .string(RevisionID($0)!.digest) })]
        if deleted { object["_deleted"] = true }
        _ = try await database.put(.object(object), newEdits: false)
    }

    func testConflictingBranchesKeepBothLeavesAndPickTheSameWinner() async throws {
        try await insert("d", ["2-bbb", "1-aaa"], body: ["side": "b"])
        try await insert("d", ["2-ccc", "1-aaa"], body: ["side": "c"])
        let winner = try database.document(id: "d")
        XCTAssertEqual(winner.revision, RevisionID("2-ccc"), "ties go to the higher revision id")
        XCTAssertEqual(winner.conflicts, [RevisionID("2-bbb")!])
        XCTAssertEqual(winner.json([.conflicts])["_conflicts"], ["2-bbb"])

        // A longer branch wins even with a lower digest.
        try await insert("d", ["3-aaa", "2-bbb", "1-aaa"], body: ["side": "b3"])
        XCTAssertEqual(try database.document(id: "d").revision, RevisionID("3-aaa"))

        // Deleting the longer branch hands the win back to the live leaf.
        try await insert("d", ["4-ddd", "3-aaa", "2-bbb", "1-aaa"], deleted: true)
        let after = try database.document(id: "d")
        XCTAssertEqual(after.revision, RevisionID("2-ccc"))
        XCTAssertEqual(after.deletedConflicts, [RevisionID("4-ddd")!])
        XCTAssertEqual(try database.info().docCount, 1)
    }

    func testAllLeavesDeletedPicksTheLongestTombstone() async throws {
        try await insert("d", ["2-aaa", "1-xxx"], deleted: true)
        try await insert("d", ["3-bbb", "2-bbb", "1-xxx"], deleted: true)
        let row = try database.openRevisions(id: "d", revisions: nil)
        XCTAssertEqual(row.count, 2)
        await assertRefused("not_found") { try self.database.document(id: "d") }
        let changes = try database.changes(ChangesOptions())
        XCTAssertEqual(changes.changes.first?.revisions.first, RevisionID("3-bbb"))
        XCTAssertEqual(changes.changes.first?.deleted, true)
        XCTAssertEqual(try database.info().deletedDocCount, 1)
    }

    func testReinsertingAKnownRevisionChangesNothing() async throws {
        try await insert("d", ["1-aaa"], body: ["v": 1])
        let sequence = try database.info().updateSequence
        try await insert("d", ["1-aaa"], body: ["v": 1])
        XCTAssertEqual(try database.info().updateSequence, sequence)
    }

    func testOpenRevisionsAndLatest() async throws {
        try await insert("d", ["2-bbb", "1-aaa"], body: ["v": "b"])
        try await insert("d", ["3-ccc", "2-ccc", "1-aaa"], body: ["v": "c"])
        let all = try database.openRevisions(id: "d", revisions: nil)
        XCTAssertEqual(Set(all.compactMap { if case .found(let doc) = $0 { doc.revision } else { nil } }),
                       [RevisionID("2-bbb")!, RevisionID("3-ccc")!])
        let named = try database.openRevisions(id: "d", revisions: [RevisionID("2-bbb")!, RevisionID("9-zzz")!])
        XCTAssertEqual(named.count, 2)
        XCTAssertEqual(named[1], .missing(RevisionID("9-zzz")!))
        // 2-ccc has no body (only known as an ancestor); with latest it resolves to its leaf.
        let ancestor = try database.openRevisions(id: "d", revisions: [RevisionID("2-ccc")!])
        XCTAssertEqual(ancestor, [.missing(RevisionID("2-ccc")!)])
        let latest = try database.openRevisions(id: "d", revisions: [RevisionID("1-aaa")!], latest: true)
        XCTAssertEqual(latest.count, 2, "1-aaa has two leaves below it")
        let history = try database.document(id: "d", revision: RevisionID("3-ccc"))
        XCTAssertEqual(history.json([.revisions])["_revisions"], ["start": 3, "ids": ["ccc", "ccc", "aaa"]])
        XCTAssertEqual(history.availability, [.available, .missing, .missing])
    }

    func testRevsDiff() async throws {
        try await insert("d", ["2-bbb", "1-aaa"])
        let diff = try database.revsDiff([
            ("d", [RevisionID("2-bbb")!, RevisionID("3-ccc")!, RevisionID("1-aaa")!]),
            ("unknown", [RevisionID("1-xyz")!]),
            ("complete", []),
        ])
        XCTAssertEqual(diff.count, 2)
        XCTAssertEqual(diff[0].id, "d")
        XCTAssertEqual(diff[0].missing, [RevisionID("3-ccc")!])
        XCTAssertEqual(diff[0].possibleAncestors, [RevisionID("2-bbb")!])
        XCTAssertEqual(diff[1].missing, [RevisionID("1-xyz")!])
    }

    /// A winner written lately is known from its text as a feed sends it, and only the very
    /// revision: another generation, digest or case of hex, or a purged one, is not.
    func testARecentWinnerIsKnownFromItsText() async throws {
        let written = try await database.put(json(#"{"_id":"t","v":1}"#)).result.get()
        func known(_ text: String, _ id: String = "t") -> Bool {
            Array(text.utf8).withUnsafeBufferPointer { database.isRecentWinner(text: $0, of: id) }
        }
        XCTAssertTrue(known(written.description))
        XCTAssertTrue(known("0" + written.description), "01-… is the revision 1-… is, as RevisionID reads it")
        XCTAssertFalse(known(written.description, "u"))
        XCTAssertFalse(known("2-" + written.digest))
        XCTAssertFalse(known("1-" + written.digest.uppercased()))
        XCTAssertFalse(known("1-" + String(written.digest.dropLast()) + (written.digest.hasSuffix("0") ? "1" : "0")))
        XCTAssertFalse(known("1-" + written.digest + "0"))
        XCTAssertFalse(known("-" + written.digest))
        XCTAssertFalse(known("1" + written.digest))
        _ = try await database.purge([("t", [written])])
        XCTAssertFalse(known(written.description), "a purged winner is not known")
    }

    /// `_revs_diff` answers a just-written winner from memory: what a purge or a rolled-back
    /// write took away, or a write through another connection changed, is never answered from there.
    func testRevsDiffNeverAnswersFromMemoryWhatTheStoreNoLongerHolds() async throws {
        let first = try await database.put(json(#"{"_id":"p","v":1}"#)).result.get()
        let rolledBack = RevisionID("1-0123456789abcdef0123456789abcdef")!
        func missing(_ id: String, _ revision: RevisionID, in db: Database? = nil) throws -> [RevisionID] {
            try (db ?? database).revsDiff([(id, [revision])]).first?.missing ?? []
        }
        XCTAssertEqual(try missing("p", first), [])

        _ = try await database.purge([("p", [first])])
        XCTAssertEqual(try missing("p", first), [first], "a purged winner was answered from memory")

        // A job that stores its document and then fails is rolled back with what it wrote.
        do throws(StoreError) {
            _ = try await database.write { context -> Void in
                var row = try EditedRow(loading: "r", in: context.connection)
                try row.write(addedBytes: 64, in: &context) { tree in
                    tree.merge(history: [rolledBack], deleted: false, body: Array("{}".utf8), attachments: []) == .added
                }
                try row.store(in: &context)
                throw StoreError.internal("the test fails this job")
            }
            XCTFail("the job did not fail")
        } catch {
            XCTAssertEqual(error, .internal("the test fails this job"))
        }
        XCTAssertEqual(try missing("r", rolledBack), [rolledBack], "a rolled-back write was answered from memory")

        // Another connection on the same file purges: the next commit here forgets what it held.
        let second = try await database.put(json(#"{"_id":"q","v":1}"#)).result.get()
        XCTAssertEqual(try missing("q", second), [])
        let other = try Database.open(path: directory.file("test.sqlite"))
        defer { other.close() }
        _ = try await other.purge([("q", [second])])
        _ = try await database.put(json(#"{"_id":"unrelated"}"#))
        XCTAssertEqual(try missing("q", second), [second], "a winner purged through another connection was answered from memory")
    }

    func testConvergesInEitherOrder() async throws {
        let other = try Database.open(path: directory.file("other.sqlite"))
        defer { other.close() }
        let histories: [([String], Bool)] = [
            (["3-c3", "2-c2", "1-a"], false), (["2-b2", "1-a"], false), (["4-d4", "3-c3", "2-c2", "1-a"], true), (["1-z"], false),
        ]
        for (history, deleted) in histories { try await insert("x", history, deleted: deleted) }
        let saved = database!
        database = other
        for (history, deleted) in histories.reversed() { try await insert("x", history, deleted: deleted) }
        database = saved
        func leaves(_ db: Database) throws -> [String] {
            try db.openRevisions(id: "x", revisions: nil).map { answer in
                guard case .found(let doc) = answer else { return "missing" }
                return "\(doc.revision) \(doc.deleted) \(doc.history)"
            }
        }
        XCTAssertEqual(try leaves(database), try leaves(other))
        XCTAssertEqual(try leaves(database).count, 3)
        XCTAssertEqual(try database.document(id: "x").revision, try other.document(id: "x").revision)
    }
}

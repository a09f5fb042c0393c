import Foundation
import JSON
import XCTest

@testable import Store

/// What an attacker picks reaches the store whole or is refused: ids holding
/// NUL, sequences beyond SQLite's integers, selector arithmetic at its edges;
/// and what the store writes is readable by its owner only.
final class HostileInputStoreTests: DatabaseTestCase {
    /// CouchDB takes any Unicode id, NUL included; it must not be cut at the NUL.
    func testIDsHoldingNULAreDocumentsOfTheirOwn() async throws {
        let victim = try await database.put(["_id": "victim", "v": 1]).revision
        let impostor = try await database.put(["_id": "victim\u{0}x", "v": 2]).revision
        XCTAssertEqual(impostor.generation, 1, "a new document, not an edit of \"victim\"")
        XCTAssertEqual(try database.document(id: "victim").revision, victim)
        XCTAssertEqual(try database.document(id: "victim\u{0}x").body["v"], 2)
        _ = try await database.delete(id: "victim\u{0}x", revision: impostor)
        XCTAssertEqual(try database.document(id: "victim").body["v"], 1)
        XCTAssertFalse(try database.document(id: "victim").deleted)

        let leading = try await database.put(["_id": "\u{0}x"]).revision
        XCTAssertEqual(try database.document(id: "\u{0}x").revision, leading)
        XCTAssertEqual(try database.allDocs(AllDocsOptions()).rows.map(\.id).sorted(), ["\u{0}x", "victim"])
        XCTAssertEqual(try database.changes(ChangesOptions()).changes.map(\.id).sorted(), ["\u{0}x", "victim", "victim\u{0}x"])

        try await database.putLocal(id: "_local/a\u{0}b", ["v": 1])
        XCTAssertEqual(try database.localDocument(id: "_local/a\u{0}b").body["v"], 1)
        await assertRefused("not_found") { try database.localDocument(id: "_local/a") }

        // `couch_doc:validate_docid`: the prefixes alone are not ids.
        await assertRefused("illegal_docid") { try await database.put(["_id": "_design/"]).result.get() }
        await assertRefused("illegal_docid") { try await database.put(["_id": "_local/"]).result.get() }
    }

    /// A `since` beyond `Int64.max` (SQLite's largest integer) lists nothing instead of trapping.
    func testSequencesBeyondSQLiteIntegersListNothing() async throws {
        _ = try await database.put(["_id": "a"])
        for since in [UInt64(Int64.max), UInt64(Int64.max) + 1, .max] {
            let page = try database.changes(ChangesOptions(since: since))
            XCTAssertEqual(page.changes.count, 0)
            XCTAssertEqual(page.pending, 0)
        }
    }

    /// `$mod` of `Int.min` by -1 overflows in Swift; CouchDB answers remainder 0.
    func testModuloAtTheEdgeOfIntegers() throws {
        let selector = try Selector(json(#"{"n": {"$mod": [-1, 0]}}"#))
        XCTAssertTrue(selector.matches(json(#"{"n": -9223372036854775808}"#)))
    }

    /// The data directory, databases with their WAL, and attachments are the owner's only.
    func testFilesAreTheOwnersOnly() async throws {
        let path = directory.file("data")
        let catalog = try Catalog(directory: path)
        defer { catalog.close() }
        let db = try catalog.create("private")
        let staged = try db.stageAttachment(Array("secret".utf8))
        _ = try await db.put(["_id": "d", "_attachments": ["a.txt": ["follows": true, "content_type": "text/plain"]]],
                             staged: ["a.txt": staged]).result.get()
        func mode(_ path: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
        }
        XCTAssertEqual(try mode(path), 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: path)
        XCTAssertTrue(files.contains("private.sqlite-wal"), "\(files)")
        for file in files {
            let full = path + "/" + file
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory)
            XCTAssertEqual(try mode(full), isDirectory.boolValue ? 0o700 : 0o600, file)
        }
        let attachments = try XCTUnwrap(files.first { $0.hasSuffix(".attachments") })
        let contents = try FileManager.default.subpathsOfDirectory(atPath: path + "/" + attachments)
        XCTAssertTrue(contents.contains { !$0.hasPrefix("tmp") }, "\(contents)")
        for file in contents {
            var isDirectory: ObjCBool = false
            let full = path + "/" + attachments + "/" + file
            _ = FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory)
            XCTAssertEqual(try mode(full), isDirectory.boolValue ? 0o700 : 0o600, file)
        }
    }
}

/// A filtered changes read that passes over many rows stops when its task is cancelled.
final class CancelledScanTests: DatabaseTestCase {
    func testAFilteredScanStopsWhenItsTaskIsCancelled() async throws {
        let documents: [JSON] = (0..<3000).map { ["_id": .string("d\($0)"), "n": .number(Double($0))] }
        _ = try await database.bulkDocs(documents.map { DocumentUpload($0) })
        var options = ChangesOptions()
        options.selector = try Selector(json(#"{"n": {"$lt": 0}}"#))
        XCTAssertEqual(try database.changes(options).changes.count, 0)
        let database = self.database!
        let scan = Task {
            while !Task.isCancelled { await Task.yield() }
            return try database.changes(options)
        }
        scan.cancel()
        do {
            _ = try await scan.value
            XCTFail("a cancelled scan went on to the end")
        } catch let error as StoreError {
            XCTAssertEqual(error, .cancelled)
        }
    }
}

/// Every leaf of a document with many conflicts read at once (`open_revs=all`), each with
/// its own conflict lists (computed once per document: 8,000 leaves took 56 s and ~400 MB).
final class ManyLeavesTests: DatabaseTestCase {
    func testEveryLeafReadAtOnceKnowsItsConflicts() async throws {
        let uploads = (0..<300).map { n in
            DocumentUpload(["_id": "d", "_rev": .string("1-" + String(format: "%032x", n)), "n": .number(Double(n))])
        }
        _ = try await database.bulkDocs(uploads, newEdits: false)
        let answers = try database.openRevisions(id: "d", revisions: nil)
        XCTAssertEqual(answers.count, 300)
        guard case .found(let best)? = answers.first, case .found(let other)? = answers.last else { return XCTFail("\(answers)") }
        XCTAssertEqual(best.conflicts.count, 299)
        XCTAssertFalse(best.conflicts.contains(best.revision))
        XCTAssertEqual(other.conflicts.count, 298, "the others but the winner and itself")
        XCTAssertFalse(other.conflicts.contains(other.revision))
    }

    /// Beyond `maximumLeaves`, a revision that adds a leaf is refused with 413; one that edits
    /// an existing leaf is still taken.
    func testLeavesBeyondTheLimitAreRefused() async throws {
        var options = Database.Options()
        options.maximumLeaves = 50
        let limited = try Database.open(path: directory.file("limited.sqlite"), name: "limited", options: options)
        defer { limited.close() }
        let uploads = (0..<51).map { n in
            DocumentUpload(["_id": "d", "_rev": .string("1-" + String(format: "%032x", n))])
        }
        let results = try await limited.bulkDocs(uploads, newEdits: false)
        XCTAssertEqual(results.filter { (try? $0.result.get()) != nil }.count, 50)
        guard case .failure(let refused) = results[50].result else { return XCTFail("the 51st leaf was taken") }
        XCTAssertEqual(refused.kind, .tooLarge)
        let leaf = RevisionID("1-" + String(format: "%032x", 7))!
        let edit = try await limited.put(["_id": "d", "_rev": .string(leaf.description), "v": 2])
        XCTAssertNoThrow(try edit.result.get())
        XCTAssertEqual(try limited.openRevisions(id: "d", revisions: nil).count, 50)
    }

    /// Beyond `maximumTreeSize` encoded bytes, a write that grows the tree is refused with 413
    /// and leaves the document as it was; one that shrinks it is still taken.
    func testATreeBeyondItsSizeLimitIsRefused() async throws {
        var options = Database.Options()
        options.maximumTreeSize = 20_000
        let limited = try Database.open(path: directory.file("sized.sqlite"), name: "sized", options: options)
        defer { limited.close() }
        let filler = String(repeating: "z", count: 1_000)
        let uploads = (0..<40).map { n in
            DocumentUpload(["_id": "d", "_rev": .string("1-" + String(format: "%032x", n)), "filler": .string(filler)])
        }
        let results = try await limited.bulkDocs(uploads, newEdits: false)
        let taken = results.filter { (try? $0.result.get()) != nil }.count
        XCTAssertTrue((10..<20).contains(taken), "\(taken) leaves of 1 kB in 20 kB")
        guard case .failure(let refused) = results[39].result else { return XCTFail("the 40th leaf was taken") }
        XCTAssertEqual(refused.kind, .tooLarge)
        XCTAssertEqual(try limited.openRevisions(id: "d", revisions: nil).count, taken)
        // Deleting a leaf (a tombstone has an empty body) shrinks the tree: always taken.
        let leaf = RevisionID("1-" + String(format: "%032x", 3))!
        _ = try await limited.delete(id: "d", revision: leaf)
    }
}

/// A batch holding many revisions of one document changes its row once (decoded once,
/// stored once), and must leave exactly what writing the revisions one by one leaves.
final class BatchedRevisionsTests: DatabaseTestCase {
    /// Branching histories of three documents, runs of one document interleaved with
    /// others and with a local document, tombstones and repeats:
    /// rows, kept ancestor bodies, sequences and counts equal those of one write each.
    func testOneBatchLeavesWhatOneWriteEachLeaves() async throws {
        var generator = SystemRandomNumberGenerator()
        var uploads: [DocumentUpload] = []
        var heads: [String: [[String]]] = ["a": [], "b": [], "c": []]
        for step in 0..<600 {
            let id = ["a", "a", "a", "b", "c"].randomElement(using: &generator)!
            if step % 97 == 0 {
                uploads.append(DocumentUpload(["_id": "_local/x", "step": .number(Double(step))]))
            }
            var branches = heads[id]!
            // Extend a branch (most often), start a new one, or send a known revision again.
            let choice = Int.random(in: 0..<10, using: &generator)
            var history: [String]
            if branches.isEmpty || choice == 0 {
                history = [String(format: "%032x", Int.random(in: 0..<Int(Int32.max), using: &generator))]
                branches.append(history)
            } else if choice == 1 {
                history = branches.randomElement(using: &generator)!
            } else {
                let branch = Int.random(in: 0..<branches.count, using: &generator)
                // Fork from an ancestor now and then, so leaves branch below the top.
                let cut = choice == 2 ? Int.random(in: 0..<branches[branch].count, using: &generator) : 0
                history = [String(format: "%032x", step)] + branches[branch].dropFirst(cut)
                if cut == 0 { branches[branch] = history } else { branches.append(history) }
            }
            heads[id] = branches
            let generation = history.count
            var json: JSON.Object = [
                "_id": .string(id), "_rev": .string("\(generation)-\(history[0])"), "step": .number(Double(step)),
                "_revisions": ["start": .number(Double(generation)), "ids": .array(history.prefix(12).map { .string($0) })],
            ]
            if Int.random(in: 0..<8, using: &generator) == 0 { json["_deleted"] = true }
            uploads.append(DocumentUpload(.object(json)))
        }

        let together = try Database.open(path: directory.file("together.sqlite"), name: "together")
        let apart = try Database.open(path: directory.file("apart.sqlite"), name: "apart")
        let batched = try await together.bulkDocs(uploads, newEdits: false)
        var single: [WriteResult] = []
        for upload in uploads { single += try await apart.bulkDocs([upload], newEdits: false) }
        XCTAssertEqual(batched.map { try? $0.result.get() }, single.map { try? $0.result.get() })
        XCTAssertEqual(try together.info().docCount, try apart.info().docCount)
        XCTAssertEqual(try together.info().deletedDocCount, try apart.info().deletedDocCount)
        XCTAssertEqual(try together.lastSequence(), try apart.lastSequence())
        together.close()
        apart.close()

        for (sql, columns) in [("SELECT id, seq, winner, deleted, tree FROM docs ORDER BY id", Int32(5)),
                               ("SELECT id, rev, body FROM ancestor_bodies ORDER BY id, rev", 3)] {
            let expected = try rows(of: directory.file("apart.sqlite"), sql, columns: columns)
            XCTAssertFalse(expected.isEmpty, sql)
            XCTAssertEqual(try rows(of: directory.file("together.sqlite"), sql, columns: columns), expected, sql)
        }
    }

    /// With a small `revs_limit`, a run of edits stemmed once leaves the tree that stemming
    /// after each edit leaves.
    func testARunStemmedOnceLeavesWhatStemmingEachLeaves() async throws {
        var history: [String] = []
        var uploads: [DocumentUpload] = []
        for step in 0..<40 {
            history.insert(String(format: "%032x", step), at: 0)
            uploads.append(DocumentUpload([
                "_id": "d", "_rev": .string("\(history.count)-\(history[0])"), "step": .number(Double(step)),
                "_revisions": ["start": .number(Double(history.count)), "ids": .array(history.prefix(3).map { .string($0) })],
            ]))
        }
        let together = try Database.open(path: directory.file("together.sqlite"), name: "together")
        let apart = try Database.open(path: directory.file("apart.sqlite"), name: "apart")
        for database in [together, apart] { try await database.setRevsLimit(5) }
        _ = try await together.bulkDocs(uploads, newEdits: false)
        for upload in uploads { _ = try await apart.bulkDocs([upload], newEdits: false) }
        together.close()
        apart.close()
        let docs = "SELECT id, seq, winner, deleted, tree FROM docs ORDER BY id"
        XCTAssertEqual(try rows(of: directory.file("together.sqlite"), docs, columns: 5),
                       try rows(of: directory.file("apart.sqlite"), docs, columns: 5))
        // Bodies are kept for the ancestors the tree still has (generations 36 to 39); one by
        // one also kept those of revisions stemmed since, which nothing reads before compaction.
        let bodies = "SELECT id, rev, body FROM ancestor_bodies ORDER BY id, rev"
        let kept = try rows(of: directory.file("together.sqlite"), bodies, columns: 3)
        XCTAssertEqual(kept, try rows(of: directory.file("apart.sqlite"), bodies, columns: 3).filter { row in
            Int(row.split(separator: " ")[1].split(separator: "-")[0])! >= 36
        })
        XCTAssertEqual(kept.count, 4)
    }

    /// The rows `sql` selects from the database file at `path`, each column as text
    /// and a long one as its length and hash, so a difference prints short.
    private func rows(of path: String, _ sql: String, columns: Int32) throws -> [String] {
        let connection = try Connection(path: path, readOnly: true)
        let select = try connection.statement(sql: sql)
        defer { select.reset() }
        var rows: [String] = []
        while try select.step() {
            rows.append((0..<columns).map { column in
                let bytes = select.blob(column)
                return bytes.count <= 40 ? String(decoding: bytes, as: UTF8.self) : "\(bytes.count) bytes #\(bytes.hashValue)"
            }.joined(separator: " "))
        }
        return rows
    }

    /// A revision refused for passing the leaf limit in the middle of a run leaves no
    /// trace; the run's later revisions of the same document are written.
    func testARevisionRefusedMidRunLeavesTheRestOfTheRun() async throws {
        var options = Database.Options()
        options.maximumLeaves = 20
        let limited = try Database.open(path: directory.file("limited.sqlite"), name: "limited", options: options)
        defer { limited.close() }
        var uploads = (0..<25).map { n in
            DocumentUpload(["_id": "d", "_rev": .string("1-" + String(format: "%032x", n))])
        }
        let root = String(format: "%032x", 3)
        uploads.append(DocumentUpload(["_id": "d", "_rev": .string("2-" + String(repeating: "e", count: 32)), "edited": true,
                                       "_revisions": ["start": 2, "ids": [.string(String(repeating: "e", count: 32)), .string(root)]]]))
        uploads.append(DocumentUpload(["_id": "other", "_rev": "1-abc"]))
        let results = try await limited.bulkDocs(uploads, newEdits: false)
        XCTAssertEqual(results.prefix(20).filter { (try? $0.result.get()) != nil }.count, 20)
        for result in results[20..<25] {
            guard case .failure(let error) = result.result else { return XCTFail("leaf \(result.id) past the limit was taken") }
            XCTAssertEqual(error.kind, .tooLarge)
        }
        XCTAssertNoThrow(try results[25].result.get())
        XCTAssertNoThrow(try results[26].result.get())
        let leaves = try limited.openRevisions(id: "d", revisions: nil)
        XCTAssertEqual(leaves.count, 20)
        XCTAssertTrue(leaves.contains { if case .found(let leaf) = $0 { leaf.revision.generation == 2 } else { false } })
        XCTAssertFalse(leaves.contains { if case .found(let leaf) = $0 { leaf.revision.description.hasSuffix(String(format: "%032x", 21)) } else { false } })
        XCTAssertEqual(try limited.lastSequence(), 22, "20 leaves, the edit and the other document")
    }
}

/// A catalog gives back the memory of databases nobody asked for lately.
final class IdleDatabaseTests: DatabaseTestCase {
    func testAnIdleDatabasesCachesAreReleasedAndItWorksOn() async throws {
        let catalog = try Catalog(directory: directory.file("catalog"))
        defer { catalog.close() }
        let db = try catalog.create("busy")
        let filler = String(repeating: "q", count: 500)
        for batch in 0..<10 {
            let uploads = (0..<1000).map { DocumentUpload(["_id": .string("d\(batch)-\($0)"), "filler": .string(filler)]) }
            _ = try await db.bulkDocs(uploads)
        }
        _ = try db.changes(ChangesOptions())
        let before = db.cacheMemory
        XCTAssertGreaterThan(before, 4 << 20, "writing 5 MB fills the writer's cache")

        // Asked for again now: the writes above take over a second under ThreadSanitizer.
        _ = try catalog.database("busy")
        let asked = ContinuousClock.now
        XCTAssertEqual(catalog.releaseIdle(after: .seconds(3600)), 0, "asked for just now")
        let due = try XCTUnwrap(catalog.nextIdle(after: .seconds(3600)))
        XCTAssertLessThanOrEqual(due, asked + .seconds(3600), "due an hour after it was last asked for")
        XCTAssertGreaterThan(due, asked + .seconds(3599))
        XCTAssertEqual(catalog.releaseIdle(after: .zero), 1)
        XCTAssertNil(catalog.nextIdle(after: .zero), "nothing is due once every open database is released")
        XCTAssertEqual(catalog.releaseIdle(after: .zero), 0, "once per idle spell")
        let after = db.cacheMemory
        XCTAssertLessThan(after, before / 10, "\(before) → \(after) bytes")

        // It works on, and is released again after its next use.
        try await db.put(["_id": "more"])
        XCTAssertEqual(try db.document(id: "d9-999").id, "d9-999")
        _ = try catalog.database("busy")
        XCTAssertNotNil(catalog.nextIdle(after: .zero), "due again once asked for")
        XCTAssertEqual(catalog.releaseIdle(after: .zero), 1)
    }
}

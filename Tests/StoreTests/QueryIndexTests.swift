import JSON
import XCTest

@testable import Store

/// Mango JSON indexes kept by the writer: what each kind of write does to the
/// entries, and what `_find` reads from them.
final class QueryIndexTests: DatabaseTestCase {
    private func ids(_ query: String) async throws -> [String] {
        try await database.find(FindQuery(json(query))).documents.map { $0["_id"]?.stringValue ?? "?" }
    }

    private func result(_ query: String) async throws -> FindResult { try await database.find(FindQuery(json(query))) }

    private func expect(_ query: String, _ expected: [String], _ message: String = "", line: UInt = #line) async throws {
        let found = try await ids(query)
        XCTAssertEqual(found, expected, message.isEmpty ? query : message, line: line)
    }

    func testTheIndexFollowsEditsAndDeletionsAndIsUsedForTheRange() async throws {
        try await database.createIndex(json(#"{"index":{"fields":["n"]},"name":"by-n"}"#))
        var revisions: [String: RevisionID] = [:]
        for (id, n) in [("a", 3), ("b", 1), ("c", 2), ("d", 5)] {
            revisions[id] = try await database.put(["_id": .string(id), "n": .number(Double(n))]).revision
        }
        let query = #"{"selector":{"n":{"$gte":2}},"sort":["n"],"execution_stats":true}"#
        try await expect(query, ["c", "a", "d"])
        let stats = try await result(query)
        XCTAssertEqual(stats.statistics.keysExamined, 3, "only the range is read")
        XCTAssertNil(stats.warning)

        try await database.put(["_id": "d", "_rev": .string(revisions["d"]!.description), "n": 0])  // moves out of the range
        try await database.delete(id: "c", revision: revisions["c"]!)
        try await database.put(["_id": "b", "_rev": .string(revisions["b"]!.description), "n": 9])  // moves in, last
        try await database.put(["_id": "e", "m": 4])  // no `n`: not in the index
        try await expect(query, ["a", "b"])
        try await expect(#"{"selector":{"n":{"$gte":2}},"sort":[{"n":"desc"}]}"#, ["b", "a"])
        try await expect(#"{"selector":{"n":{"$gt":null}},"sort":["n"]}"#, ["d", "a", "b"])
    }

    func testOnlyTheWinningRevisionOfAConflictIsIndexed() async throws {
        try await database.createIndex(json(#"{"index":{"fields":["color"]}}"#))
        _ = try await database.put(json(#"{"_id":"x","_rev":"2-aa","_revisions":{"start":2,"ids":["aa","11"]},"color":"blue"}"#), newEdits: false)
        _ = try await database.put(json(#"{"_id":"x","_rev":"2-bb","_revisions":{"start":2,"ids":["bb","11"]},"color":"red"}"#), newEdits: false)
        try await expect(#"{"selector":{"color":"red"}}"#, ["x"], "2-bb wins")
        try await expect(#"{"selector":{"color":"blue"}}"#, [])
        // A longer branch arriving by replication makes the other leaf win.
        _ = try await database.put(
            json(#"{"_id":"x","_rev":"3-cc","_revisions":{"start":3,"ids":["cc","aa","11"]},"color":"green"}"#), newEdits: false)
        try await expect(#"{"selector":{"color":"red"}}"#, [])
        try await expect(#"{"selector":{"color":"green"},"conflicts":true,"fields":["_id","_conflicts"]}"#, ["x"])
        let conflicts = try await result(#"{"selector":{"color":"green"},"conflicts":true,"fields":["_conflicts"]}"#)
        XCTAssertEqual(conflicts.documents, [json(#"{"_conflicts":["2-bb"]}"#)])
    }

    func testADesignDocumentFromAnotherNodeBuildsItsIndexAndItsDeletionDropsIt() async throws {
        for n in 0..<50 { try await database.put(["_id": .string("doc\(n)"), "n": .number(Double(n % 7))]) }
        // As CouchDB writes it; it arrives by replication, not through `_index`.
        let design = json(#"""
            {"_id":"_design/remote","_rev":"1-abc","_revisions":{"start":1,"ids":["abc"]},"language":"query",
             "views":{"by-n":{"map":{"fields":{"n":"asc"},"partial_filter_selector":{}},"reduce":"_count",
                              "options":{"def":{"fields":["n"]}}}}}
            """#)
        _ = try await database.put(design, newEdits: false)
        let indexes = try database.queryIndexes()
        XCTAssertEqual(indexes.map { $0["name"]?.stringValue }, ["_all_docs", "by-n"])
        let sorted = try await result(#"{"selector":{"n":{"$eq":6}},"sort":["n"],"limit":100}"#)
        XCTAssertEqual(Set(sorted.documents.compactMap { $0["_id"]?.stringValue }), Set((0..<50).filter { $0 % 7 == 6 }.map { "doc\($0)" }))
        XCTAssertEqual(sorted.statistics.keysExamined, 7)

        _ = try await database.put(json(#"{"_id":"_design/remote","_rev":"2-def","_revisions":{"start":2,"ids":["def","abc"]},"_deleted":true}"#),
                                   newEdits: false)
        XCTAssertEqual(try database.queryIndexes().count, 1)
        await assertRefused("no_usable_index") { try await self.database.find(FindQuery(json(#"{"selector":{"n":6},"sort":["n"]}"#))) }
    }

    func testADatabaseWrittenBeforeIndexesGetsTheIndexesOfItsDesignDocuments() async throws {
        try await database.put(["_id": "a", "n": 2])
        try await database.put(["_id": "b", "n": 1])
        try await database.createIndex(json(#"{"index":{"fields":["n"]},"ddoc":"old","name":"by-n"}"#))
        database.close()
        // Make the file look as schema 1 left it: no index tables.
        do {
            let connection = try Connection(path: directory.file("test.sqlite"), readOnly: false)
            try connection.execute("DROP TABLE query_entries; DROP TABLE query_indexes; PRAGMA user_version = 1")
        }
        database = try Database.open(path: directory.file("test.sqlite"), name: "test")
        try await expect(#"{"selector":{"n":{"$gt":0}},"sort":["n"]}"#, ["b", "a"])
    }

    func testAPurgedDocumentLeavesTheIndex() async throws {
        try await database.createIndex(json(#"{"index":{"fields":["n"]}}"#))
        let revision = try await database.put(["_id": "a", "n": 1]).revision
        try await database.put(["_id": "b", "n": 2])
        _ = try await database.purge([(id: "a", revisions: [revision])])
        try await expect(#"{"selector":{"n":{"$gt":0}},"sort":["n"]}"#, ["b"])
    }

    func testBookmarksPageThroughEveryDocumentOnceWhileWritesGoOn() async throws {
        try await database.createIndex(json(#"{"index":{"fields":["k"]}}"#))
        let count = 10_000
        let key = { (n: Int) in Double((n * 7919) % 500) }
        var revisions: [String: RevisionID] = [:]
        let uploads = (0..<count).map { DocumentUpload(["_id": .string(String(format: "d%05d", $0)), "k": .number(key($0))]) }
        for result in try await database.bulkDocs(uploads) { revisions[result.id] = result.revision }
        // Meanwhile a writer adds documents, deletes some of its own, and edits the originals (key unchanged).
        let database = self.database!
        let originals = revisions
        let writer = Task {
            var revisions = originals
            var round = 0
            while !Task.isCancelled {
                round += 1
                let id = String(format: "d%05d", (round * 13) % count)
                revisions[id] = try await database.put(["_id": .string(id), "_rev": .string(revisions[id]!.description),
                                                        "k": .number(key((round * 13) % count)), "round": .number(Double(round))]).revision
                let added = try await database.put(["_id": .string("new\(round)"), "k": .number(Double(round % 500))]).revision
                if round % 2 == 0 { try await database.put(["_id": .string("new\(round)"), "_rev": .string(added.description), "_deleted": true]) }
            }
            return round
        }
        var seen: [String] = []
        var bookmark = "nil"
        while true {
            let answer = try await result(#"{"selector":{"k":{"$gte":0}},"sort":["k"],"limit":100,"bookmark":"\#(bookmark)"}"#)
            if answer.documents.isEmpty { break }
            seen += answer.documents.compactMap { $0["_id"]?.stringValue }
            bookmark = answer.bookmark
            await Task.yield()
        }
        writer.cancel()
        let rounds = try await writer.value
        XCTAssertGreaterThan(rounds, 10, "writes went on while the pages were read")
        let original = seen.filter { $0.hasPrefix("d") }
        XCTAssertEqual(original.count, count, "each document once")
        XCTAssertEqual(Set(original).count, count)
        XCTAssertEqual(Set(seen).count, seen.count, "no document twice")
    }

    func testAQueryCatchesTheIndexUpUnlessToldNotTo() async throws {
        try await database.createIndex(json(#"{"index":{"fields":["n"]}}"#))
        let a = try await database.put(["_id": "a", "n": 1]).revision
        try await expect(#"{"selector":{"n":{"$gt":0}},"sort":["n"]}"#, ["a"])
        try await database.put(["_id": "a", "_rev": .string(a.description), "n": -1])  // leaves the range
        try await database.put(["_id": "b", "n": 2])
        // As it is: `b` is not in it yet, and `a`'s entry is stale, but `a` no longer matches.
        try await expect(#"{"selector":{"n":{"$gt":0}},"sort":["n"],"update":false}"#, [])
        try await expect(#"{"selector":{"n":{"$gt":0}},"sort":["n"],"stale":"ok"}"#, [])
        try await expect(#"{"selector":{"n":{"$gt":0}},"sort":["n"]}"#, ["b"])
        try await expect(#"{"selector":{"n":{"$lt":0}},"sort":["n"]}"#, ["a"])
    }

    func testCatchingUpGoesInBoundedTransactions() async throws {
        try await database.createIndex(json(#"{"index":{"fields":["n"]}}"#))
        _ = try await database.bulkDocs((0..<50).map { DocumentUpload(["_id": .string("d\($0)"), "n": .number(Double($0))]) })
        var transactions = 0
        while try await database.write({ context in try IndexEntries.catchUp(in: &context, limit: 7) }) { transactions += 1 }
        XCTAssertEqual(transactions, 7, "50 documents, 7 at a time: 7 that leave some behind, and the last")
        let all = try await result(#"{"selector":{"n":{"$gte":0}},"sort":["n"],"limit":100,"update":false}"#)
        XCTAssertEqual(all.documents.count, 50)
    }

    func testAttachmentStubsAreIndexedAsTheSelectorSeesThem() async throws {
        try await database.createIndex(json(#"{"index":{"fields":["_attachments.photo.content_type"]}}"#))
        try await database.put(json(#"{"_id":"p","_attachments":{"photo":{"content_type":"image/png","data":"aGVsbG8="}}}"#))
        try await database.put(["_id": "q", "v": 1])
        let found = try await result(#"{"selector":{"_attachments.photo.content_type":"image/png"}}"#)
        XCTAssertNil(found.warning, "the index serves it")
        XCTAssertEqual(found.documents.map { $0["_id"] }, ["p"])
    }

    func testAQueryWaitsOnlyForTheIndexItReads() async throws {
        _ = try await database.bulkDocs((0..<50).map { DocumentUpload(["_id": .string("d\($0)"), "n": .number(Double($0)), "m": 1]) })
        try await database.createIndex(json(#"{"index":{"fields":["n"]},"ddoc":"n","name":"n"}"#))
        let scanned = try await result(#"{"selector":{"m":1},"limit":100}"#)
        XCTAssertEqual(scanned.documents.count, 50)
        let database = self.database!
        let sequences = { try database.read { db in try IndexEntries.load(from: db).map(\.sequence) } }
        XCTAssertEqual(try sequences(), [0], "a query on _all_docs leaves the new index alone")
        try await expect(#"{"selector":{"n":{"$lt":2}},"sort":["n"]}"#, ["d0", "d1"])
        XCTAssertEqual(try sequences(), [51])
    }

    func testTheIndexBoundingMoreLeadingFieldsWinsAsInCouchDB() async throws {
        try await database.createIndex(json(#"{"index":{"fields":["a"]},"ddoc":"a","name":"a"}"#))
        try await database.createIndex(json(#"{"index":{"fields":["a","b"]},"ddoc":"ab","name":"ab"}"#))
        let plan = try database.explain(FindQuery(json(#"{"selector":{"a":{"$gt":1},"b":{"$gt":2}}}"#)))
        XCTAssertEqual(plan["index"]?["name"], "ab")
        // A sort must be the columns after the leading fields fixed by $eq, with nothing between.
        try await database.createIndex(json(#"{"index":{"fields":["a","b","c"]},"ddoc":"abc","name":"abc"}"#))
        try await database.put(["_id": "x", "a": 1, "b": 1, "c": 5])
        try await expect(#"{"selector":{"a":1,"b":1,"c":{"$gt":0}},"sort":["c"],"use_index":"abc","allow_fallback":false}"#, ["x"])
        await assertRefused("no_usable_index") {
            try await self.database.find(FindQuery(json(#"{"selector":{"a":1,"b":1,"c":{"$gt":0}},"sort":["a","c"],"use_index":"abc","allow_fallback":false}"#)))
        }
        await assertRefused("no_usable_index") { try await self.database.find(FindQuery(json(#"{"selector":{"c":1},"allow_fallback":false}"#))) }
        let tooMany = (0...QueryIndex.maximumFields).map { JSON.string("f\($0)") }
        await assertRefused("invalid_index") { try await self.database.createIndex(["index": ["fields": .array(tooMany)]]) }
        await assertRefused("invalid_sort_field") { try await self.database.createIndex(json(#"{"index":{"fields":[{"":"asc"}]}}"#)) }
    }

    func testAScanStopsWhenItsTaskIsCancelled() async throws {
        let uploads = (0..<5000).map { DocumentUpload(["_id": .string("d\($0)"), "n": .number(Double($0))]) }
        _ = try await database.bulkDocs(uploads)
        let database = self.database!
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await database.find(FindQuery(json(#"{"selector":{"n":-1}}"#)))
        }
        do {
            _ = try await task.value
            XCTFail("a cancelled scan went on")
        } catch let error as StoreError {
            XCTAssertEqual(error, .cancelled)
        }
    }

    func testIndexesAreListedCreatedOnceAndDeleted() async throws {
        let first = try await database.createIndex(json(#"{"index":{"fields":[{"a":"desc"},{"b":"desc"}]},"ddoc":"ix","name":"ab"}"#))
        XCTAssertEqual(first.0, .created)
        XCTAssertEqual(first.designDocument, "_design/ix")
        let again = try await database.createIndex(json(#"{"index":{"fields":[{"a":"desc"},{"b":"desc"}]},"ddoc":"ix","name":"ab"}"#))
        XCTAssertEqual(again.0, .exists)
        let unnamed = try await database.createIndex(json(#"{"index":{"fields":["c"]}}"#))
        XCTAssertEqual(unnamed.designDocument, "_design/" + unnamed.name, "the default ddoc and name are one hash")
        let listed = try database.queryIndexes()
        XCTAssertEqual(listed.count, 3)
        XCTAssertEqual(listed[0], json(#"{"ddoc":null,"name":"_all_docs","type":"special","def":{"fields":[{"_id":"asc"}]}}"#))
        XCTAssertEqual(listed[2]["def"], json(#"{"fields":[{"a":"desc"},{"b":"desc"}]}"#))
        let design = try database.document(id: "_design/ix")
        XCTAssertEqual(design.body["language"], "query")
        XCTAssertEqual(design.body["views"]?["ab"]?["map"]?["fields"], json(#"{"a":"desc","b":"desc"}"#))

        try await database.deleteIndex(designDocument: "ix", name: "ab")
        XCTAssertEqual(try database.queryIndexes().count, 2)
        await assertRefused("not_found") { try self.database.document(id: "_design/ix") }
        await assertRefused("not_found") { try await self.database.deleteIndex(designDocument: "ix", name: "ab") }
        await assertRefused("unsupported_mixed_sort") {
            try await self.database.createIndex(json(#"{"index":{"fields":[{"a":"desc"},"b"]}}"#))
        }
        await assertRefused("missing_required_key") { try await self.database.createIndex(json(#"{"index":{}}"#)) }
        await assertRefused("invalid_index") { try await self.database.createIndex(json(#"{"index":{"fields":["a"]},"type":"text"}"#)) }
    }
}

import XCTest
@testable import Store

/// Local documents, `_all_docs` and the catalog of databases.
final class LocalAndListingTests: DatabaseTestCase {
    func testLocalDocumentRevisionsAndConflicts() async throws {
        let first = try await database.putLocal(id: "_local/cp", ["seq": 1])
        XCTAssertEqual(first.description, "0-1")
        await assertRefused("conflict") { try await self.database.putLocal(id: "_local/cp", ["seq": 2]) }
        let second = try await database.putLocal(id: "_local/cp", ["_rev": "0-1", "seq": 2])
        XCTAssertEqual(second.description, "0-2")
        let stored = try database.localDocument(id: "_local/cp")
        XCTAssertEqual(stored.json, ["_id": "_local/cp", "_rev": "0-2", "seq": 2])
        await assertRefused("conflict") { try await self.database.deleteLocal(id: "_local/cp", revision: first) }
        try await database.deleteLocal(id: "_local/cp", revision: second)
        await assertRefused("not_found") { try self.database.localDocument(id: "_local/cp") }

        // _local documents may also come through bulk writes.
        let results = try await database.bulkDocs([DocumentUpload(["_id": "_local/bulk", "x": 1])])
        XCTAssertEqual(try results[0].result.get().description, "0-1")
        XCTAssertEqual(try database.info().docCount, 0)
    }

    /// A write with a claim creates a missing document, replaces one that satisfies the
    /// claim, and finds another writer's missing, changing nothing, even with its `_rev`.
    func testAClaimedWriteNeverReplacesAnotherWritersDocument() async throws {
        let mine = LocalDocumentClaim(key: "writer", value: "me")
        let theirs = LocalDocumentClaim(key: "writer", value: "them")
        let first = try await database.putLocal(id: "_local/cp", ["writer": "me", "seq": 1], claim: mine)
        let second = try await database.putLocal(id: "_local/cp", ["_rev": .string(first.description), "writer": "me", "seq": 2], claim: mine)
        await assertRefused("not_found") {
            try await self.database.putLocal(id: "_local/cp", ["_rev": .string(second.description), "writer": "them"], claim: theirs)
        }
        await assertRefused("not_found") { try await self.database.deleteLocal(id: "_local/cp", revision: second, claim: theirs) }
        XCTAssertEqual(try database.localDocument(id: "_local/cp").json, ["_id": "_local/cp", "_rev": "0-2", "writer": "me", "seq": 2])
        try await database.deleteLocal(id: "_local/cp", revision: second, claim: mine)
        await assertRefused("not_found") { try self.database.localDocument(id: "_local/cp") }
    }

    func testAllDocsRangesAndKeys() async throws {
        for id in ["b", "a", "d", "c", "e"] { try await database.put(["_id": .string(id)]) }
        let deleted = try database.document(id: "e").revision
        try await database.delete(id: "e", revision: deleted)

        XCTAssertEqual(try database.allDocs(AllDocsOptions()).rows.map(\.id), ["a", "b", "c", "d"])
        var options = AllDocsOptions()
        options.startKey = "b"
        options.endKey = "d"
        options.inclusiveEnd = false
        var page = try database.allDocs(options)
        XCTAssertEqual(page.rows.map(\.id), ["b", "c"])
        XCTAssertEqual(page.offset, 1)
        XCTAssertEqual(page.totalRows, 4)

        options = AllDocsOptions()
        options.descending = true
        options.skip = 1
        options.limit = 2
        XCTAssertEqual(try database.allDocs(options).rows.map(\.id), ["c", "b"])

        options = AllDocsOptions()
        options.keys = ["c", "zz", "e"]
        options.includeDocuments = true
        page = try database.allDocs(options)
        XCTAssertEqual(page.rows.map(\.id), ["c", "zz", "e"])
        XCTAssertNotNil(page.rows[0].document)
        XCTAssertNil(page.rows[1].revision, "unknown key")
        XCTAssertTrue(page.rows[2].deleted)
        XCTAssertNil(page.rows[2].document)
    }

    func testCatalogCreatesListsAndDeletes() throws {
        let catalog = try Catalog(directory: directory.file("catalog"))
        defer { catalog.close() }
        let notes = try catalog.create("notes")
        try catalog.create("a/b")
        XCTAssertEqual(catalog.names(), ["a/b", "notes"])
        XCTAssertThrowsError(try catalog.create("notes")) { XCTAssertEqual(($0 as? StoreError)?.error, "file_exists") }
        XCTAssertThrowsError(try catalog.create("Bad")) { XCTAssertEqual(($0 as? StoreError)?.error, "illegal_database_name") }
        XCTAssertThrowsError(try catalog.database("missing")) { XCTAssertEqual(($0 as? StoreError)?.kind, .notFound) }
        XCTAssertTrue(try catalog.database("notes") === notes)
        let uuid = notes.uuid
        try catalog.delete("notes")
        XCTAssertEqual(catalog.names(), ["a/b"])
        XCTAssertNotEqual(try catalog.create("notes").uuid, uuid, "a new database gets a new identity")
    }

    func testUUIDIsStableAcrossReopen() throws {
        let uuid = database.uuid
        database.close()
        database = try Database.open(path: directory.file("test.sqlite"))
        XCTAssertEqual(database.uuid, uuid)
        XCTAssertEqual(uuid.count, 32)
    }
}

import Foundation
import JSON
import Locking
import XCTest
@testable import Store

/// The store's view indexes with map functions written in Swift (as a program embedding the store
/// may give them): where rows are kept, when they go, and how updates are shared and bounded.
final class ViewStoreTests: DatabaseTestCase {
    /// A view's "map" names a field: each document emits that field's value as key and `n` as value.
    final class FieldMaps: DesignFunctions {
        let batches = Locked<[Int]>([])

        func validate(_ updates: [ProposedUpdate], by designs: [DesignDocument], context: ValidationContext) async -> [StoreError?] {
            updates.map { _ in nil }
        }

        func filter(_ documents: [JSON], by function: DesignFilter, of design: DesignDocument, request: JSON) async throws(StoreError) -> [Bool] {
            documents.map { _ in true }
        }

        func map(_ documents: [JSON], by group: ViewGroup) async throws(StoreError) -> [[[ViewEmission]]] {
            batches.withLock { $0.append(documents.count) }
            try? await Task.sleep(for: .milliseconds(20))
            return documents.map { document in
                group.views.map { view in document[view.map].map { [ViewEmission(key: $0, value: document["n"] ?? nil)] } ?? [] }
            }
        }
    }

    private func open(_ functions: FieldMaps, path: String? = nil) throws -> Database {
        var options = Database.Options()
        options.designFunctions = functions
        return try Database.open(path: path ?? directory.file("views.sqlite"), options: options)
    }

    private func rows(in db: Database) throws -> Int {
        try db.read { connection in
            let count = try connection.statement("SELECT count(*) FROM view_rows")
            defer { count.reset() }
            return try count.step() ? count.int(0) : -1
        }
    }

    func testRowsGoWithTheFunctionsThatMadeThemWithThePurgedDocumentAndWithTheDesignDocument() async throws {
        let db = try open(FieldMaps())
        defer { db.close() }
        _ = try await db.bulkDocs((0..<10).map { DocumentUpload(["_id": .string("d\($0)"), "type": .string($0 % 2 == 0 ? "even" : "odd"), "n": .number(Double($0))]) })
        let design = try await db.put(["_id": "_design/app", "views": ["by_type": ["map": "type"]]])
        let odd = try await db.queryView(design: "app", view: "by_type", { var query = ViewQuery(); query.startKey = "odd"; return query }())
        XCTAssertEqual(odd.rows.map(\.id), ["d1", "d3", "d5", "d7", "d9"])
        XCTAssertEqual(odd.offset, 5)
        XCTAssertEqual(try rows(in: db), 10)

        // A purged document's rows go at once: no update would see it again.
        let d1 = try db.document(id: "d1").revision
        _ = try await db.purge([(id: "d1", revisions: [d1])])
        XCTAssertEqual(try rows(in: db), 9)

        // New functions: the old rows go when the design document changes, the new ones come with the next query.
        let edited = try await db.put(["_id": "_design/app", "_rev": .string(try design.result.get().description), "views": ["by_n": ["map": "n"]]])
        XCTAssertEqual(try rows(in: db), 0)
        let rebuilt = try await db.queryView(design: "app", view: "by_n", ViewQuery())
        XCTAssertEqual(rebuilt.totalRows, 9)
        XCTAssertEqual(try rows(in: db), 9)

        _ = try await db.delete(id: "_design/app", revision: try edited.result.get())
        XCTAssertEqual(try rows(in: db), 0)
        do {
            _ = try await db.queryView(design: "app", view: "by_n", ViewQuery())
            XCTFail("a deleted design document's view answered")
        } catch {
            XCTAssertEqual(error, StoreError.notFound("missing"))
        }
    }

    func testQueriesArrivingTogetherShareOneUpdateInBoundedBatches() async throws {
        let functions = FieldMaps()
        let db = try open(functions)
        defer { db.close() }
        for start in stride(from: 0, to: 5_000, by: 1_000) {
            _ = try await db.bulkDocs((start..<start + 1_000).map { DocumentUpload(["_id": .string("d\($0)"), "n": .number(Double($0))]) })
        }
        _ = try await db.put(["_id": "_design/app", "views": ["by_n": ["map": "n"]]])
        let answers = try await withThrowingTaskGroup(of: Int?.self) { group in
            for _ in 0..<4 { group.addTask { try await db.queryView(design: "app", view: "by_n", ViewQuery()).totalRows } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(answers, [5_000, 5_000, 5_000, 5_000])
        let batches = functions.batches.withLock { $0 }
        XCTAssertEqual(batches.reduce(0, +), 5_000, "each document mapped once, however many queries waited: \(batches)")
        XCTAssertLessThanOrEqual(batches.max() ?? 0, Database.viewBatch.documents)
        XCTAssertGreaterThan(batches.count, 1)
    }

    func testANativeViewIsIndexedQueriedReducedAndRebuiltWhenItsVersionChanges() async throws {
        let db = try Database.open(path: directory.file("native.sqlite"))
        defer { db.close() }
        _ = try await db.bulkDocs((0..<12).map { DocumentUpload(["_id": .string("d\($0)"), "tags": .array(($0 % 3 == 0 ? ["red", "blue"] : ["red"]).map(JSON.string)), "n": .number(Double($0))]) })
        let byTag = NativeView(name: "by_tag", version: "1", map: { document in
            (document["tags"]?.arrayValue ?? []).map { ViewEmission(key: $0, value: document["n"] ?? nil) }
        }, reduce: .function { _, values, _ in .number(values.compactMap(\.doubleValue).reduce(0, +)) })
        try await db.defineView(byTag)
        var grouped = ViewQuery()
        grouped.group = true
        let sums = try await db.queryView(named: "by_tag", grouped)
        XCTAssertEqual(sums.rows.map(\.key), ["blue", "red"])
        XCTAssertEqual(sums.rows.map(\.value), [.number(0 + 3 + 6 + 9), .number(Double((0..<12).reduce(0, +)))])
        var blue = ViewQuery()
        blue.startKey = "blue"
        blue.endKey = "blue"
        blue.reduce = false
        let blueRows = try await db.queryView(named: "by_tag", blue)
        XCTAssertEqual(blueRows.rows.map(\.id), ["d0", "d3", "d6", "d9"])
        XCTAssertEqual(blueRows.totalRows, 16)

        // A new version maps anew; the rows of the old one are gone.
        try await db.defineView(NativeView(name: "by_tag", version: "2", map: { document in
            [ViewEmission(key: document["n"] ?? nil, value: nil)]
        }, reduce: .builtin("_count")))
        XCTAssertEqual(try rows(in: db), 0)
        let counted = try await db.queryView(named: "by_tag", ViewQuery())
        XCTAssertEqual(counted.rows.map(\.value), [12])
        XCTAssertEqual(try rows(in: db), 12)
        do {
            _ = try await db.queryView(named: "nothing", ViewQuery())
            XCTFail("an undefined native view answered")
        } catch {
            XCTAssertEqual(error, StoreError.notFound("missing_named_view"))
        }
    }

    func testTotalRowsAndOffsetsStayExactAsBlocksSplitAndRowsComeAndGo() async throws {
        let db = try Database.open(path: directory.file("blocks.sqlite"))
        defer { db.close() }
        // Keys 0..<1000, six rows each at first: blocks split as the build goes.
        try await db.defineView(NativeView(name: "mod", version: "1", map: { document in
            [ViewEmission(key: .number(Double(Int(document["n"]?.doubleValue ?? 0) % 1000)), value: nil)]
        }))
        var keys: [String: Int] = [:]
        for start in stride(from: 0, to: 6_000, by: 2_000) {
            _ = try await db.bulkDocs((start..<start + 2_000).map { DocumentUpload(["_id": .string("d\($0)"), "n": .number(Double($0))]) })
            for index in start..<start + 2_000 { keys["d\(index)"] = index % 1000 }
            var empty = ViewQuery()
            empty.limit = 0
            let counted = try await db.queryView(named: "mod", empty)
            XCTAssertEqual(counted.totalRows, keys.count)
        }
        // Then a third of them deleted and a third moved to other keys, updated incrementally.
        var generator = SystemRandomNumberGenerator()
        var uploads: [DocumentUpload] = []
        for index in stride(from: 0, to: 6_000, by: 3) {
            let id = "d\(index)"
            let revision = try db.document(id: id).revision
            uploads.append(DocumentUpload(["_id": .string(id), "_rev": .string(revision.description), "_deleted": true]))
            keys[id] = nil
        }
        for index in stride(from: 1, to: 6_000, by: 3) {
            let id = "d\(index)", n = Int.random(in: 0..<1000, using: &generator)
            let revision = try db.document(id: id).revision
            uploads.append(DocumentUpload(["_id": .string(id), "_rev": .string(revision.description), "n": .number(Double(n))]))
            keys[id] = n
        }
        _ = try await db.bulkDocs(uploads)
        for _ in 0..<40 {
            let key = Int.random(in: 0..<1000, using: &generator)
            for descending in [false, true] {
                var query = ViewQuery()
                query.startKey = .number(Double(key))
                query.descending = descending
                query.limit = 3
                let answer = try await db.queryView(named: "mod", query)
                XCTAssertEqual(answer.totalRows, keys.count)
                let before = keys.values.filter { descending ? $0 > key : $0 < key }.count
                XCTAssertEqual(answer.offset, before, "startkey \(key), descending \(descending)")
                let firstKey = descending ? keys.values.filter { $0 <= key }.max() : keys.values.filter { $0 >= key }.min()
                XCTAssertEqual(answer.rows.first.map { Int($0.key.doubleValue ?? -1) }, firstKey)
            }
        }
        let blocks = try db.read { connection in
            let select = try connection.statement("SELECT count(*), max(rows), sum(rows) FROM view_blocks")
            defer { select.reset() }
            _ = try select.step()
            return [select.int(0), select.int(1), select.int(2)]
        }
        XCTAssertGreaterThan(blocks[0], 3, "the view was split into blocks")
        XCTAssertLessThanOrEqual(blocks[1], 2 * ViewBlocks.size)
        XCTAssertEqual(blocks[2], keys.count)
    }

    func testIndexesBuiltWithAnotherCollationAreEmptiedWhenOpenedAndBuiltAgain() async throws {
        let path = directory.file("collation.sqlite")
        do {
            let db = try open(FieldMaps(), path: path)
            _ = try await db.bulkDocs((0..<5).map { DocumentUpload(["_id": .string("d\($0)"), "n": .number(Double($0))]) })
            _ = try await db.put(["_id": "_design/app", "views": ["by_n": ["map": "n"]]])
            _ = try await db.createIndex(["index": ["fields": ["n"]]])
            let built = try await db.queryView(design: "app", view: "by_n", ViewQuery())
            XCTAssertEqual(built.totalRows, 5)
            _ = try await db.find(try FindQuery(["selector": ["n": ["$gt": 1]]]))
            // As if an older release had built them with other weights.
            try await db.write { context in
                try context.connection.execute("UPDATE meta SET value = 0 WHERE key = 'collation_version'")
            }
            db.close()
        }
        let db = try open(FieldMaps(), path: path)
        defer { db.close() }
        XCTAssertEqual(try rows(in: db), 0, "the views' rows were emptied")
        let entries = try db.read { connection in
            let count = try connection.statement("SELECT count(*) FROM query_entries")
            defer { count.reset() }
            return try count.step() ? count.int(0) : -1
        }
        XCTAssertEqual(entries, 0, "and Mango's entries")
        let rebuilt = try await db.queryView(design: "app", view: "by_n", ViewQuery())
        XCTAssertEqual(rebuilt.rows.map(\.id), ["d0", "d1", "d2", "d3", "d4"])
        let found = try await db.find(try FindQuery(["selector": ["n": ["$gt": 1]]]))
        XCTAssertEqual(found.documents.count, 3)
    }
}

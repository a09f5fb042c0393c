import Foundation
import JSON
import Locking
import XCTest
@testable import Store

/// The store's seam for design documents' functions, with functions written in Swift (as a
/// program embedding the store may give them): what is judged, with which `oldDoc`, and in
/// rounds bounded by the stored documents read.
final class DesignFunctionsTests: DatabaseTestCase {
    /// Refuses documents without `type`; records each round it is asked.
    final class TypeRequired: DesignFunctions {
        let rounds = Locked<[[ProposedUpdate]]>([])

        func validate(_ updates: [ProposedUpdate], by designs: [DesignDocument], context: ValidationContext) async -> [StoreError?] {
            rounds.withLock { $0.append(updates) }
            return updates.map { update in
                if update.newDocument["_deleted"] == true { return nil }
                if update.oldDocument?["locked"] == true { return StoreError(.forbidden, error: "forbidden", reason: "locked") }
                return update.newDocument["type"] == nil ? StoreError(.forbidden, error: "forbidden", reason: "no type") : nil
            }
        }

        func filter(_ documents: [JSON], by function: DesignFilter, of design: DesignDocument, request: JSON) async throws(StoreError) -> [Bool] {
            documents.map { $0["type"] == request["query"]?["type"] }
        }
    }

    private func judged(by functions: TypeRequired) throws -> Database {
        var options = Database.Options()
        options.designFunctions = functions
        return try Database.open(path: directory.file("judged.sqlite"), options: options)
    }

    func testWritesAreJudgedOnlyOnceADesignDocumentHasAFunction() async throws {
        let functions = TypeRequired()
        let db = try judged(by: functions)
        defer { db.close() }
        try await db.put(["_id": "free"])
        XCTAssertTrue(functions.rounds.withLock(\.isEmpty), "no design document: nothing to ask")
        try await db.put(["_id": "_design/rules", "validate_doc_update": "function () {}"])
        let results = try await db.bulkDocs([DocumentUpload(["_id": "a", "type": "t"]), DocumentUpload(["_id": "b"]),
                                             DocumentUpload(["_id": "_local/c"]), DocumentUpload(["_id": "_design/d"])])
        XCTAssertNotNil(try? results[0].result.get())
        XCTAssertEqual(results[1].result.failure, StoreError(.forbidden, error: "forbidden", reason: "no type"))
        XCTAssertNotNil(try? results[2].result.get(), "_local documents are not judged")
        XCTAssertNotNil(try? results[3].result.get(), "design documents are not judged")
        XCTAssertEqual(functions.rounds.withLock { $0.last?.map { $0.newDocument["_id"] } }, ["a", "b"])
        // A design document deleted: writes are free again.
        let rules = try db.document(id: "_design/rules").revision
        try await db.delete(id: "_design/rules", revision: rules)
        try await db.put(["_id": "untyped"])
    }

    func testLargeDocumentsAreJudgedInRoundsBoundedByWhatIsRead() async throws {
        let functions = TypeRequired()
        let db = try judged(by: functions)
        defer { db.close() }
        let large = String(repeating: "x", count: 6 << 20)
        var revisions: [String: RevisionID] = [:]
        for index in 0..<4 {
            revisions["d\(index)"] = try await db.put(["_id": .string("d\(index)"), "type": "t", "locked": .bool(index == 2), "text": .string(large)]).result.get()
        }
        try await db.put(["_id": "_design/rules", "validate_doc_update": "function () {}"])
        let edits = (0..<4).map { index in
            DocumentUpload(["_id": .string("d\(index)"), "_rev": .string(revisions["d\(index)"]!.description), "type": "t"])
        }
        let results = try await db.bulkDocs(edits)
        XCTAssertEqual(results.map { (try? $0.result.get()) == nil }, [false, false, true, false], "only the locked one is refused")
        let rounds = functions.rounds.withLock { $0.map(\.count) }
        XCTAssertEqual(rounds.reduce(0, +), 4)
        XCTAssertGreaterThan(rounds.count, 1, "24 MB of stored documents are not read for one round: \(rounds)")
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

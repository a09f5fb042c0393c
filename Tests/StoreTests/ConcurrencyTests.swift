import Foundation
import JSON
import Synchronization
import XCTest
@testable import Store

/// Readers keep seeing consistent snapshots while a writer commits.
final class ConcurrencyTests: XCTestCase {
    /// Each bulk write sets the same round number on ten documents in one
    /// transaction; a reader must never see the ten disagree (a half-applied
    /// write), nor the update sequence go backwards.
    func testReadersSeeWholeCommitsWhileWriterCommitsThousandsOfTransactions() async throws {
        let directory = TemporaryDirectory("concurrency")
        defer { directory.remove() }
        let database = try Database.open(path: directory.file("c.sqlite"))
        defer { database.close() }
        // Short histories: this test is about snapshots, not deep revision trees.
        try await database.setRevsLimit(10)

        let ids = (0..<10).map { "member-\($0)" }
        var revisions = [String: String]()
        let rounds = 2000

        let readers = (0..<4).map { reader in
            Task.detached { () throws -> Int in
                var lastSequence: UInt64 = 0
                var lastRound = -1.0
                var reads = 0
                while !Task.isCancelled {
                    var options = AllDocsOptions()
                    options.includeDocuments = true
                    options.keys = ids
                    let page = try database.allDocs(options)
                    let values = page.rows.compactMap { $0.document?.body["round"]?.doubleValue }
                    if !values.isEmpty {
                        XCTAssertEqual(values.count, ids.count, "reader \(reader) saw part of a bulk write")
                        XCTAssertEqual(Set(values).count, 1, "reader \(reader) saw a half-applied write: \(values)")
                        XCTAssertGreaterThanOrEqual(values[0], lastRound, "reader \(reader) went back in time")
                        lastRound = values[0]
                    }
                    XCTAssertGreaterThanOrEqual(page.updateSequence, lastSequence)
                    lastSequence = page.updateSequence
                    reads += 1
                    // Share the cooperative threads with the writing task.
                    await Task.yield()
                }
                return reads
            }
        }

        for round in 0..<rounds {
            let uploads = ids.map { id -> DocumentUpload in
                var body: JSON.Object = ["_id": .string(id), "round": .number(Double(round))]
                if let revision = revisions[id] { body["_rev"] = .string(revision) }
                return DocumentUpload(.object(body))
            }
            for result in try await database.bulkDocs(uploads) {
                revisions[result.id] = try result.result.get().description
            }
        }
        var observations = 0
        for reader in readers {
            reader.cancel()
            observations += try await reader.value
        }
        XCTAssertGreaterThan(observations, 100, "readers barely ran")
        let info = try database.info()
        XCTAssertEqual(info.docCount, ids.count)
        XCTAssertEqual(try database.document(id: "member-3").revision.generation, rounds)
    }

    /// Writers from many tasks are grouped into shared commits, and every
    /// caller gets its own result.
    func testConcurrentWritersAllSucceedAndAreGrouped() async throws {
        let directory = TemporaryDirectory("group")
        defer { directory.remove() }
        let database = try Database.open(path: directory.file("g.sqlite"))
        defer { database.close() }
        let before = database.writer.transactions.load(ordering: .relaxed)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<250 {
                        try await database.put(["_id": .string("t\(task)-\(index)"), "v": .number(Double(index))])
                    }
                }
            }
            try await group.waitForAll()
        }
        let info = try database.info()
        XCTAssertEqual(info.docCount, 2000)
        XCTAssertEqual(info.updateSequence, 2000)
        // 2000 writes from 8 concurrent tasks must have shared transactions.
        let transactions = database.writer.transactions.load(ordering: .relaxed) - before
        XCTAssertLessThan(transactions, 1900, "writes were not grouped")
        XCTAssertGreaterThan(transactions, 0)
    }

    /// A change notification arrives after the commit, and the committed data is readable then.
    func testCommitNotificationComesAfterDataIsVisible() async throws {
        let directory = TemporaryDirectory("notify")
        defer { directory.remove() }
        let database = try Database.open(path: directory.file("n.sqlite"))
        defer { database.close() }
        var iterator = database.commits().makeAsyncIterator()
        let writer = Task { try await database.put(["_id": "x", "v": 1]) }
        let sequence = await iterator.next()
        XCTAssertEqual(sequence, 1)
        XCTAssertEqual(try database.document(id: "x").body["v"], 1)
        _ = try await writer.value
    }
}

import JSON
import XCTest
@testable import Store

/// The sequence-ordered changes feed.
final class ChangesTests: DatabaseTestCase {
    func testEachDocumentOnceAtItsLatestSequence() async throws {
        let a = try await database.put(["_id": "a", "v": 1]).revision
        try await database.put(["_id": "b", "v": 1])
        let a2 = try await database.put(["_id": "a", "_rev": .string(a.description), "v": 2]).revision
        try await database.put(["_id": "c", "v": 1])
        let page = try database.changes(ChangesOptions())
        XCTAssertEqual(page.changes.map(\.id), ["b", "a", "c"])
        XCTAssertEqual(page.changes.map(\.sequence), [2, 3, 4])
        XCTAssertEqual(page.changes[1].revisions, [a2])
        XCTAssertEqual(page.lastSequence, 4)
        XCTAssertEqual(page.pending, 0)

        var since = ChangesOptions(since: 2)
        since.limit = 1
        let limited = try database.changes(since)
        XCTAssertEqual(limited.changes.map(\.id), ["a"])
        XCTAssertEqual(limited.lastSequence, 3)
        XCTAssertEqual(limited.pending, 1)

        var descending = ChangesOptions()
        descending.descending = true
        XCTAssertEqual(try database.changes(descending).changes.map(\.id), ["c", "a", "b"])
    }

    func testStyleAllDocsListsEveryLeafAndDeletionsShow() async throws {
        _ = try await database.put(json(#"{"_id":"d","_rev":"2-bb","_revisions":{"start":2,"ids":["bb","aa"]}}"#), newEdits: false)
        _ = try await database.put(json(#"{"_id":"d","_rev":"2-cc","_revisions":{"start":2,"ids":["cc","aa"]}}"#), newEdits: false)
        var options = ChangesOptions()
        options.allLeaves = true
        XCTAssertEqual(try database.changes(options).changes[0].revisions, [RevisionID("2-cc")!, RevisionID("2-bb")!])
        options.allLeaves = false
        XCTAssertEqual(try database.changes(options).changes[0].revisions, [RevisionID("2-cc")!])

        let e = try await database.put(["_id": "e"]).revision
        try await database.delete(id: "e", revision: e)
        options.includeDocuments = true
        let last = try database.changes(options).changes.last!
        XCTAssertEqual(last.id, "e")
        XCTAssertTrue(last.deleted)
        XCTAssertEqual(last.document?.deleted, true)
    }

    func testDocumentIDAndSelectorFilters() async throws {
        for index in 0..<10 {
            try await database.put(["_id": .string("doc\(index)"), "type": index % 2 == 0 ? "even" : "odd", "n": .number(Double(index))])
        }
        var byID = ChangesOptions()
        byID.documentIDs = ["doc7", "doc2", "nothing"]
        XCTAssertEqual(try database.changes(byID).changes.map(\.id), ["doc2", "doc7"])

        var bySelector = ChangesOptions(since: 2)
        bySelector.selector = try Selector(["type": "even", "n": ["$gte": 4]])
        bySelector.limit = 2
        let page = try database.changes(bySelector)
        XCTAssertEqual(page.changes.map(\.id), ["doc4", "doc6"])
        XCTAssertEqual(page.lastSequence, 7)
    }

    func testChangeFeedDeliversNewCommitsWithoutPolling() async throws {
        try await database.put(["_id": "before"])
        let feed = database.changeFeed(ChangesOptions())
        let (pages, page) = AsyncStream.makeStream(of: Void.self)
        let reader = Task { () throws -> [String] in
            var ids: [String] = []
            for try await changes in feed {
                ids += changes.map(\.id)
                if !changes.isEmpty { page.yield() }
                if ids.count == 3 { break }
            }
            return ids
        }
        // The feed has given what was there; what follows it must wait for.
        for await _ in pages { break }
        try await database.put(["_id": "after1"])
        try await database.put(["_id": "after2"])
        let ids = try await withThrowingTaskGroup(of: [String].self) { group in
            group.addTask { try await reader.value }
            group.addTask {
                try await Task.sleep(for: .seconds(10))
                reader.cancel()
                throw CancellationError()
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
        XCTAssertEqual(ids, ["before", "after1", "after2"])
    }

    func testChangeFeedEndsWhenTheDatabaseCloses() async throws {
        let feed = database.changeFeed(ChangesOptions())
        let (pages, page) = AsyncStream.makeStream(of: Void.self)
        let reader = Task { () throws -> Int in
            var count = 0
            for try await changes in feed {
                count += changes.count
                if !changes.isEmpty { page.yield() }
            }
            return count
        }
        try await database.put(["_id": "x"])
        for await _ in pages { break }  // the feed has delivered it
        database.close()
        let count = try await reader.value
        XCTAssertEqual(count, 1)
        database = try Database.open(path: directory.file("test.sqlite"))
    }

    /// Feeds at the same place share the page the first read: the second takes the rows as
    /// they were then, and a document changed since comes again at its new sequence.
    /// A member's pull writes relayed changes: a first-hand feed leaves out each document whose
    /// latest change was relayed, until a first-hand change moves it on again.
    func testAFirstHandFeedLeavesOutWhatAMembersPullWrote() async throws {
        let a = try await database.put(["_id": "a", "v": 1]).revision
        _ = try await database.bulkDocs([DocumentUpload(json(#"{"_id":"b","_rev":"1-bb","_revisions":{"start":1,"ids":["bb"]}}"#))],
                                        newEdits: false, relayed: true)
        _ = try await database.bulkDocs([DocumentUpload(json(#"{"_id":"c","_rev":"1-cc","_revisions":{"start":1,"ids":["cc"]}}"#))],
                                        newEdits: false)
        // A relayed conflict supersedes a's first-hand row.
        _ = try await database.bulkDocs([DocumentUpload(json(#"{"_id":"a","_rev":"1-ff","_revisions":{"start":1,"ids":["ff"]}}"#))],
                                        newEdits: false, relayed: true)
        var firstHand = ChangesOptions()
        firstHand.firstHandOnly = true
        firstHand.allLeaves = true
        XCTAssertEqual(try database.changes(ChangesOptions()).changes.map(\.id), ["b", "c", "a"])
        XCTAssertEqual(try database.changes(firstHand).changes.map(\.id), ["c"])
        XCTAssertEqual(try database.changes(firstHand).lastSequence, 4, "read to the end: the checkpoint passes the relayed rows")

        // An edit here makes b first-hand again, at its new sequence.
        let b2 = try await database.put(["_id": "b", "_rev": "1-bb", "v": 2]).revision
        XCTAssertEqual(try database.changes(firstHand).changes.map(\.id), ["c", "b"])
        XCTAssertEqual(try database.changes(firstHand).changes.last?.revisions, [b2])
        firstHand.documentIDs = ["a", "b"]
        XCTAssertEqual(try database.changes(firstHand).changes.map(\.id), ["b"])
        firstHand.documentIDs = nil
        var allLeaves = ChangesOptions()
        allLeaves.allLeaves = true
        XCTAssertEqual(Set(try database.changes(allLeaves).changes.first { $0.id == "a" }?.revisions ?? []), [a, RevisionID("1-ff")!])

        // Writes grouped into one transaction keep their own marks.
        let database = self.database!
        async let relayed = database.bulkDocs(
            [DocumentUpload(json(#"{"_id":"d","_rev":"1-dd","_revisions":{"start":1,"ids":["dd"]}}"#))], newEdits: false, relayed: true)
        async let local = database.bulkDocs((0..<20).map { DocumentUpload(["_id": .string("e\($0)")]) })
        _ = try await (relayed, local)
        let listed = try database.changes(firstHand).changes.map(\.id)
        XCTAssertFalse(listed.contains("d"))
        XCTAssertEqual(listed.filter { $0.hasPrefix("e") }.count, 20)
    }

    /// A whole feed's page is not handed to a first-hand feed at the same place.
    func testAFirstHandFeedDoesNotTakeTheWholeFeedsPage() async throws {
        try await database.put(["_id": "a"])
        _ = try await database.bulkDocs([DocumentUpload(json(#"{"_id":"b","_rev":"1-bb","_revisions":{"start":1,"ids":["bb"]}}"#))],
                                        newEdits: false, relayed: true)
        var whole = database.changeFeed(ChangesOptions()).makeAsyncIterator()
        let wholePage = try await whole.next()
        XCTAssertEqual(wholePage?.map(\.id), ["a", "b"])
        var options = ChangesOptions()
        options.firstHandOnly = true
        var firstHand = database.changeFeed(options).makeAsyncIterator()
        let firstHandPage = try await firstHand.next()
        XCTAssertEqual(firstHandPage?.map(\.id), ["a"])
    }

    /// A file from before changes were marked relayed opens with every change first-hand.
    func testAFileFromBeforeRelayedMarksListsEveryChangeFirstHand() async throws {
        try await database.put(["_id": "a"])
        _ = try await database.bulkDocs([DocumentUpload(json(#"{"_id":"b","_rev":"1-bb","_revisions":{"start":1,"ids":["bb"]}}"#))],
                                        newEdits: false, relayed: true)
        database.close()
        do {
            let connection = try Connection(path: directory.file("test.sqlite"), readOnly: false)
            try connection.execute("ALTER TABLE docs DROP COLUMN relayed; PRAGMA user_version = 2")
        }
        database = try Database.open(path: directory.file("test.sqlite"), name: "test")
        var firstHand = ChangesOptions()
        firstHand.firstHandOnly = true
        XCTAssertEqual(try database.changes(firstHand).changes.map(\.id), ["a", "b"])
        _ = try await database.bulkDocs([DocumentUpload(json(#"{"_id":"c","_rev":"1-cc","_revisions":{"start":1,"ids":["cc"]}}"#))],
                                        newEdits: false, relayed: true)
        XCTAssertEqual(try database.changes(firstHand).changes.map(\.id), ["a", "b"])
        XCTAssertEqual(try database.changes(ChangesOptions()).changes.map(\.id), ["a", "b", "c"])
    }

    func testFeedsAtTheSamePlaceShareThePageOneRead() async throws {
        let first = try await database.put(["_id": "a", "v": 1]).revision
        var options = ChangesOptions()
        options.includeDocuments = true
        options.allLeaves = true
        var early = database.changeFeed(options).makeAsyncIterator()
        var late = database.changeFeed(options).makeAsyncIterator()
        let read = try await early.next()
        XCTAssertEqual(read?.map(\.revisions), [[first]])
        let second = try await database.put(["_id": "a", "_rev": .string(first.description), "v": 2]).revision

        let shared = try await late.next()
        XCTAssertEqual(shared?.map(\.sequence), [1], "the page read before the edit")
        XCTAssertEqual(shared?.first?.document?.body["v"], 1)
        let after = try await late.next()
        XCTAssertEqual(after?.map(\.sequence), [2])
        XCTAssertEqual(after?.first?.revisions, [second])
        XCTAssertEqual(after?.first?.document?.body["v"], 2)

        // Other options read for themselves.
        var winners = database.changeFeed(ChangesOptions()).makeAsyncIterator()
        let own = try await winners.next()
        XCTAssertEqual(own?.map(\.sequence), [2])
    }

    /// A feed that found nothing new leaves nothing to share: two caught-up feeds both get the next commit.
    func testCaughtUpFeedsBothGetTheNextCommit() async throws {
        try await database.put(["_id": "a"])
        var options = ChangesOptions()
        options.includeDocuments = true
        let feeds = (0..<2).map { _ in database.changeFeed(options) }
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let readers = feeds.map { feed in
            Task { () throws -> [String] in
                var ids: [String] = []
                for try await changes in feed {
                    ids += changes.map(\.id)
                    if ids == ["a"] { start.yield() }
                    if ids.count == 2 { break }
                }
                return ids
            }
        }
        var count = 0
        for await _ in started {
            count += 1
            if count == 2 { break }
        }
        try await Task.sleep(for: .milliseconds(50))  // both wait for a commit
        try await database.put(["_id": "b"])
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            for reader in readers { reader.cancel() }
        }
        defer { timeout.cancel() }
        for reader in readers {
            let ids = try await reader.value
            XCTAssertEqual(ids, ["a", "b"])
        }
    }

    /// A page of large bodies is not kept once read: the next feed reads for itself.
    func testAPageOfLargeBodiesIsNotShared() async throws {
        let big = JSON.string(String(repeating: "x", count: SharedFeedPage.largestKept / 2))
        let first = try await database.put(["_id": "a", "big": big, "v": 1]).revision
        try await database.put(["_id": "b", "big": big])
        var options = ChangesOptions()
        options.includeDocuments = true
        var early = database.changeFeed(options).makeAsyncIterator()
        var late = database.changeFeed(options).makeAsyncIterator()
        _ = try await early.next()
        try await database.put(["_id": "a", "_rev": .string(first.description), "big": big, "v": 2])
        let page = try await late.next()
        XCTAssertEqual(page?.map(\.id), ["b", "a"])
        XCTAssertEqual(page?.last?.document?.body["v"], 2)
    }

    func testLocalDocumentsStayOutOfTheFeed() async throws {
        try await database.putLocal(id: "_local/checkpoint", ["seq": 5])
        XCTAssertTrue(try database.changes(ChangesOptions()).changes.isEmpty)
        XCTAssertEqual(try database.info().updateSequence, 0)
    }
}

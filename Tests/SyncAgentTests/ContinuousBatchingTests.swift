import AsyncAlgorithms
import Foundation
import JSON
import Locking
import Logging
import Store
@testable import SyncAgent
import XCTest

/// A continuous replication carries a burst in full batches, a lone write alone and at
/// once, and checkpoints on its cadence and when it falls idle; the listener's waiting
/// feeds send what is ready in one write.
final class ContinuousBatchingTests: XCTestCase {
    /// A target that counts the `_revs_diff` questions it is asked, and the documents they name.
    private struct CountingTarget: ForwardingEndpoint {
        let inner: any Endpoint
        let questions = Locked(0)
        let asked = Locked<[String]>([])

        func missingRevisions(_ revisions: [DocumentRevisions]) async throws(EndpointError) -> [MissingRevisions] {
            questions.withLock { $0 += 1 }
            asked.withLock { $0 += revisions.map(\.id) }
            return try await inner.missingRevisions(revisions)
        }
    }

    /// A continuous replication between two databases of a new catalog, started.
    private func localContinuousReplication(checkpointInterval: Duration) throws
        -> (TemporaryDirectory, Catalog, Database, Database, Replicator) {
        let directory = try TemporaryDirectory(prefix: "syncd-checkpoints")
        let catalog = try Catalog(directory: directory.path)
        let source = try catalog.create("source")
        let target = try catalog.create("target")
        var configuration = ReplicationConfiguration(source: LocalEndpoint(source), target: LocalEndpoint(target))
        configuration.continuous = true
        configuration.checkpointInterval = checkpointInterval
        let replicator = Replicator(configuration)
        replicator.start()
        return (directory, catalog, source, target, replicator)
    }

    private func uploads(_ count: Int, prefix: String) -> [DocumentUpload] {
        (0..<count).map { DocumentUpload(["_id": .string("\(prefix)\($0)"), "n": .number(Double($0))]) }
    }

    func testABurstThroughAContinuousFeedTravelsInFullBatchesAndALoneWriteAtOnce() async throws {
        let server = try await startListener()
        let source = try server.catalog.create("source")
        let directory = try TemporaryDirectory(prefix: "syncd-burst")
        let catalog = try Catalog(directory: directory.path)
        defer { catalog.close(); directory.remove() }
        let target = try catalog.create("target")
        let remote = try RemoteEndpoint(url: server.url + "/source")
        let counting = CountingTarget(inner: LocalEndpoint(target))
        var configuration = ReplicationConfiguration(source: remote, target: counting)
        configuration.continuous = true
        configuration.batchSize = 500
        configuration.heartbeat = .milliseconds(500)
        let replicator = Replicator(configuration)
        replicator.start()
        defer { Task { await replicator.stop(); await remote.shutdown() } }

        try await source.put(["_id": "first"])
        try await waitUntil("the first document arrives", timeout: .seconds(60)) { try target.info().docCount == 1 }
        try await waitUntil("the replication is idle", timeout: .seconds(60)) { replicator.status.activity == .idle }
        let before = counting.questions.withLock { $0 }

        for result in try await source.bulkDocs(uploads(5000, prefix: "burst-")) { _ = try result.result.get() }
        try await waitUntil("the burst arrives", timeout: .seconds(60)) { try target.info().docCount == 5001 }
        let questions = counting.questions.withLock { $0 } - before
        print("a burst of 5,000 changes took \(questions) _revs_diff requests")
        XCTAssertLessThanOrEqual(questions, 50, "a burst of 5,000 changes in batches of 500")

        // Idle again: one write goes alone, without waiting for a batch to fill.
        try await waitUntil("the replication is idle", timeout: .seconds(60)) { replicator.status.activity == .idle }
        try await source.put(["_id": "lone"])
        try await waitUntil("a lone write arrives", timeout: .seconds(5)) { (try? target.document(id: "lone")) != nil }
        XCTAssertNil(replicator.status.lastError)
    }

    /// In a group each member lists every revision to every other: a row naming only the
    /// target's latest winner is counted where it is read, and goes no further.
    func testRowsNamingTheTargetsLatestWinnersAreCountedNotQueued() async throws {
        let server = try await startListener()
        let source = try server.catalog.create("source")
        let directory = try TemporaryDirectory(prefix: "syncd-held")
        let catalog = try Catalog(directory: directory.path)
        defer { catalog.close(); directory.remove() }
        let target = try catalog.create("target")
        for result in try await source.bulkDocs(uploads(300, prefix: "d")) { _ = try result.result.get() }
        // The target gets the same revisions another way first (as from another member).
        var local = ReplicationConfiguration(source: LocalEndpoint(source), target: LocalEndpoint(target))
        local.continuous = false
        let copied = await Replicator(local).run()
        XCTAssertNil(copied.lastError)
        XCTAssertEqual(try target.info().docCount, 300)

        let remote = try RemoteEndpoint(url: server.url + "/source")
        let counting = CountingTarget(inner: LocalEndpoint(target))
        var configuration = ReplicationConfiguration(source: remote, target: counting)
        configuration.continuous = true
        configuration.heartbeat = .milliseconds(500)
        let replicator = Replicator(configuration)
        replicator.start()
        defer { Task { await replicator.stop(); await remote.shutdown() } }
        let end = try source.lastSequence()
        try await waitUntil("the feed is read and checkpointed", timeout: .seconds(60)) { replicator.status.checkpointedSequence?.localNumber == end }
        XCTAssertEqual(counting.asked.withLock { $0 }, [], "no held row reaches _revs_diff")
        let status = replicator.status
        XCTAssertEqual(status.completed, 300)
        XCTAssertEqual(status.revisionsChecked, 300)
        XCTAssertEqual(status.missingRevisionsFound, 0)
        XCTAssertEqual(status.docsWritten, 0)

        // A new document and an edit of a held one are not held: both go the usual way.
        let d7 = try source.document(id: "d7").revision
        _ = try await source.put(["_id": "d7", "_rev": .string(d7.description), "n": 70])
        _ = try await source.put(["_id": "new"])
        try await waitUntil("both arrive", timeout: .seconds(60)) {
            (try? target.document(id: "d7").body["n"]) == .number(70) && (try? target.document(id: "new")) != nil
        }
        XCTAssertEqual(Set(counting.asked.withLock { $0 }), ["d7", "new"])
        XCTAssertNil(replicator.status.lastError)
    }

    /// A source that records which documents are fetched from it (`_bulk_get`).
    private struct FetchRecordingSource: ForwardingEndpoint {
        let inner: any Endpoint
        let fetched = Locked<[String]>([])

        func revisions(_ requests: [MissingRevisions], staging: AttachmentStaging, deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
            fetched.withLock { $0 += requests.map(\.id) }
            try await inner.revisions(requests, staging: staging, deliver: deliver)
        }
    }

    func testANewDocumentArrivesWithItsChangeAndWhatNeedsMoreIsFetched() async throws {
        let server = try await startListener()
        let source = try server.catalog.create("source")
        let directory = try TemporaryDirectory(prefix: "syncd-carried")
        let catalog = try Catalog(directory: directory.path)
        defer { catalog.close(); directory.remove() }
        let target = try catalog.create("target")
        let remote = try RemoteEndpoint(url: server.url + "/source")
        let recording = FetchRecordingSource(inner: remote)
        var configuration = ReplicationConfiguration(source: recording, target: LocalEndpoint(target))
        configuration.continuous = true
        configuration.heartbeat = .milliseconds(500)
        let replicator = Replicator(configuration)
        replicator.start()
        defer { Task { await replicator.stop(); await remote.shutdown() } }
        try await waitUntil("the replication is idle", timeout: .seconds(60)) { replicator.status.activity == .idle }

        // A new document without attachments: the feed carries it, nothing is fetched.
        let first = try await source.put(["_id": "new", "n": 1])
        try await waitUntil("the new document arrives", timeout: .seconds(60)) { (try? target.document(id: "new")) != nil }
        XCTAssertEqual(try target.document(id: "new").json(.revisions), try source.document(id: "new").json(.revisions))
        XCTAssertEqual(recording.fetched.withLock { $0 }, [])

        // An edit has a history, and an attachment's content is never in a feed: both are fetched.
        _ = try await source.put(["_id": "new", "_rev": .string(try first.result.get().description), "n": 2])
        _ = try await source.put(["_id": "photo", "_attachments": ["a.txt": ["content_type": "text/plain", "data": "aGVsbG8="]]])
        try await waitUntil("the edit and the attachment arrive", timeout: .seconds(60)) {
            (try? target.document(id: "new").body["n"]) == .number(2) && (try? target.document(id: "photo")) != nil
        }
        XCTAssertEqual(Set(recording.fetched.withLock { $0 }), ["new", "photo"])
        XCTAssertEqual(try target.openRevisions(id: "new", revisions: nil).count, 1, "the edit extends the carried revision")
        // The counts follow the write (a batch is counted once its last part is written).
        try await waitUntil("three documents counted", timeout: .seconds(60)) { replicator.status.docsWritten == 3 }
        XCTAssertNil(replicator.status.lastError)
    }

    /// A continuous feed may name a document twice in a batch: the target is asked once per
    /// document, in feed order, about every leaf either row named.
    func testEachDocumentIsAskedAboutOnceWithEveryLeafNamed() throws {
        let (x, y, z) = (RevisionID("1-aa")!, RevisionID("1-bb")!, RevisionID("2-cc")!)
        let rows = [
            ChangedDocument(sequence: .zero, id: "a", revisions: [x], deleted: false),
            ChangedDocument(sequence: .zero, id: "b", revisions: [y], deleted: false),
            ChangedDocument(sequence: .zero, id: "a", revisions: [z, x], deleted: false),
        ]
        XCTAssertEqual(RevisionFinder.leaves(of: rows), [
            DocumentRevisions(id: "a", revisions: [x, z]), DocumentRevisions(id: "b", revisions: [y]),
        ])
        XCTAssertEqual(RevisionFinder.leaves(of: []), [])
    }

    /// The fetcher parses a carried document only if the target still lacks it; one that does
    /// not parse is read from the source after all.
    func testCarriedDocumentsAreTakenWhenStillMissingAndReadWhenTheyDoNotParse() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-carried")
        let catalog = try Catalog(directory: directory.path)
        defer { catalog.close(); directory.remove() }
        let source = try catalog.create("source")
        var rows: [ChangedDocument] = []
        for id in ["kept", "garbled", "written since"] {
            let revision = try await source.put(["_id": .string(id)]).result.get()
            var row = ChangedDocument(sequence: .zero, id: id, revisions: [revision], deleted: false)
            row.carriedDocument = id == "garbled" ? Array(#"{"_id":"garbled","#.utf8) : try source.document(id: id).json().serializedBytes()
            rows.append(row)
        }
        let recording = FetchRecordingSource(inner: LocalEndpoint(source))
        let fetcher = RevisionFetcher(source: recording, staging: .inline, parallelism: 1,
                                      targetWinners: { _, id in id == "written since" }, logger: Logger(label: "test"))
        var batch = ReplicationBatch(changes: ChangeBatch(changes: rows, lastSequence: .zero, pending: nil, caughtUp: true))
        batch.missing = rows.map { MissingRevisions(id: $0.id, missing: $0.revisions) }
        let (input, output) = (AsyncChannel<ReplicationBatch>(), AsyncChannel<ReplicationBatch>())
        Task {
            await input.send(batch)
            input.finish()
        }
        Task { try await fetcher.run(from: input, into: output) }
        var found: [String] = []
        for await part in output {
            for case .found(let revision) in part.fetched { found.append(revision.id) }
        }
        XCTAssertEqual(found.sorted(), ["garbled", "kept"])
        XCTAssertEqual(recording.fetched.withLock { $0 }, ["garbled"], "only the text that does not parse is read")
    }

    func testAFeedDocumentThatDisagreesWithItsRowIsNotTaken() throws {
        let revision = try XCTUnwrap(RevisionID("1-0123456789abcdef0123456789abcdef"))
        let row = ChangedDocument(sequence: .zero, id: "a", revisions: [revision], deleted: false)
        let good: JSON = ["_id": "a", "_rev": .string(revision.description), "x": 1]
        var carrying = row
        carrying.carriedDocument = good.serializedBytes()
        XCTAssertEqual(carrying.firstRevision, RemoteEndpoint.firstRevision(of: row, in: good))
        carrying.carriedDocument = Array(#"{"_id":"a","_rev":"\#(revision)","x":"\x"}"#.utf8)
        XCTAssertNil(carrying.firstRevision, "a carried text that is not JSON")
        let taken = try XCTUnwrap(RemoteEndpoint.firstRevision(of: row, in: good))
        XCTAssertEqual(taken.json["_revisions"], ["start": 1, "ids": [.string(revision.digest)]])
        XCTAssertEqual(taken.json["x"], 1)

        var otherRow = row
        otherRow.revisions = [revision, try XCTUnwrap(RevisionID("1-fedcba9876543210fedcba9876543210"))]
        var deletedRow = row
        deletedRow.deleted = true
        let second = try XCTUnwrap(RevisionID("2-0123456789abcdef0123456789abcdef"))
        let cases: [(String, ChangedDocument, JSON?)] = [
            ("no doc", row, nil),
            ("another id", row, ["_id": "b", "_rev": .string(revision.description)]),
            ("another revision", row, ["_id": "a", "_rev": "1-fedcba9876543210fedcba9876543210"]),
            ("a later generation", ChangedDocument(sequence: .zero, id: "a", revisions: [second], deleted: false),
             ["_id": "a", "_rev": .string(second.description)]),
            ("a conflict", otherRow, good),
            ("deleted", deletedRow, good),
            ("attachments", row, ["_id": "a", "_rev": .string(revision.description), "_attachments": ["f": ["stub": true]]]),
            ("a history of its own", row, ["_id": "a", "_rev": .string(revision.description), "_revisions": ["start": 1, "ids": []]]),
            ("not an object", row, .array([])),
        ]
        for (name, row, doc) in cases {
            XCTAssertNil(RemoteEndpoint.firstRevision(of: row, in: doc), name)
        }
    }

    func testACheckpointFollowsTheCadenceUnderWritesAndIsTakenWhenIdle() async throws {
        let (directory, catalog, source, _, replicator) = try localContinuousReplication(checkpointInterval: .milliseconds(300))
        defer { catalog.close(); Task { await replicator.stop() }; directory.remove() }

        // A steady stream of writes: checkpoints follow it while it goes on (up to 60 s on a busy machine).
        var checkpoints = Set<UInt64>()
        let deadline = ContinuousClock.now + .seconds(60)
        var n = 0
        while checkpoints.subtracting([0]).count < 4 && ContinuousClock.now < deadline {
            try await source.put(["_id": .string("w\(n)")])
            n += 1
            if let sequence = replicator.status.checkpointedSequence?.localNumber { checkpoints.insert(sequence) }
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTAssertGreaterThanOrEqual(checkpoints.subtracting([0]).count, 4, "checkpoints while writes go on: \(checkpoints.sorted())")
        try await waitUntil("the checkpoint reaches the last write", timeout: .seconds(60)) {
            replicator.status.checkpointedSequence?.localNumber == (try source.lastSequence())
        }
    }

    func testAnIdleReplicationCheckpointsWithoutWaitingForTheInterval() async throws {
        let (directory, catalog, source, target, replicator) = try localContinuousReplication(checkpointInterval: .seconds(3600))
        defer { catalog.close(); Task { await replicator.stop() }; directory.remove() }

        for result in try await source.bulkDocs(uploads(1200, prefix: "d")) { _ = try result.result.get() }
        try await waitUntil("the documents arrive", timeout: .seconds(60)) { try target.info().docCount == 1200 }
        try await waitUntil("an idle checkpoint, with an interval of an hour", timeout: .seconds(10)) {
            replicator.status.checkpointedSequence?.localNumber == (try source.lastSequence())
        }
        // The checkpoint is on both sides, where a restarted replication reads it.
        let id = ReplicationID(sourceIdentity: "db:" + source.uuid, targetIdentity: "db:" + target.uuid,
                               sourceIsLocal: true, targetIsLocal: true, filter: nil)
        for side in [source, target] {
            let checkpoint = try side.localDocument(id: "_local/" + id.value).json
            XCTAssertEqual(checkpoint["source_last_seq"], .number(Double(try source.lastSequence())))
        }
    }

    func testTheListenersContinuousFeedSendsABurstInFewWrites() async throws {
        let server = try await startListener()
        let source = try server.catalog.create("db")
        try await source.put(["_id": "first"])
        let connection = try RawHTTPConnection(url: server.url)
        defer { connection.close() }
        try connection.get("/db/_changes?feed=continuous&heartbeat=60000&since=0")
        XCTAssertTrue(connection.read(until: { $0.contains(#""id":"first""#) }), connection.text)
        let received = connection.received.count

        for result in try await source.bulkDocs(uploads(3000, prefix: "burst-")) { _ = try result.result.get() }
        XCTAssertTrue(connection.read(until: { $0.contains(#""id":"burst-2999""#) }), "the burst arrives")
        // Each write of the feed is one chunk of the chunked answer.
        let chunks = Self.chunkSizes(Array(connection.received[received...]))
        print("3,000 changes arrived in \(chunks.count) chunks")
        XCTAssertEqual(chunks.reduce(0, +) > 0, true)
        XCTAssertLessThanOrEqual(chunks.count, 10, "the first chunk sizes: \(chunks.prefix(20))")
    }

    /// The sizes of the complete chunks of a chunked HTTP body, from a chunk boundary on.
    private static func chunkSizes(_ bytes: [UInt8]) -> [Int] {
        var sizes: [Int] = []
        var index = 0
        while let lineEnd = bytes[index...].firstIndex(of: UInt8(ascii: "\r")), lineEnd + 1 < bytes.count {
            guard let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self), radix: 16), size > 0 else { break }
            let next = lineEnd + 2 + size + 2
            guard next <= bytes.count else { break }
            sizes.append(size)
            index = next
        }
        return sizes
    }
}

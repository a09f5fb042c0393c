import Foundation
import JSON
import Locking
import Store
import SyncAgent
import Testing

/// The replicator between two databases of this process: the pipeline and
/// protocol steps without HTTP.
@Suite struct ReplicatorLocalTests {
    @Test func copiesDocumentsAndResumesWithNothingResent() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await pair.a.putDocuments(count: 250, prefix: "doc")
        let first = await pair.replicate(from: pair.a, to: pair.b, batchSize: 40)
        #expect(first.lastError == nil)
        #expect(first.docsWritten == 250)
        #expect(first.completed == 250)
        #expect(try pair.b.info().docCount == 250)
        try await ReplicationTesting.expectSameDocuments(pair.a, pair.b)

        let second = await pair.replicate(from: pair.a, to: pair.b, batchSize: 40)
        #expect(second.docsRead == 0)
        #expect(second.docsWritten == 0)
        #expect(second.completed == 0)
    }

    @Test func conflictingEditsConvergeToTheSameWinner() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        for database in [pair.a, pair.b] {
            try await database.put(["_id": "shared", "_rev": "1-aaaa", "_revisions": ["start": 1, "ids": ["aaaa"]], "v": 0], newEdits: false)
        }
        for n in 0..<3 {
            let current = try pair.a.document(id: "shared").revision
            try await pair.a.put(["_id": "shared", "_rev": .string(current.description), "side": "a", "n": .number(Double(n))])
        }
        let bCurrent = try pair.b.document(id: "shared").revision
        try await pair.b.put(["_id": "shared", "_rev": .string(bCurrent.description), "side": "b"])

        async let push = pair.replicate(from: pair.a, to: pair.b)
        async let pull = pair.replicate(from: pair.b, to: pair.a)
        let (pushed, pulled) = await (push, pull)
        #expect(pushed.lastError == nil && pulled.lastError == nil)

        let onA = try pair.a.document(id: "shared")
        let onB = try pair.b.document(id: "shared")
        #expect(onA.revision == onB.revision)
        #expect(onA.revision.generation == 4)
        #expect(onA.body["side"] == "a")
        #expect(onA.conflicts == onB.conflicts)
        #expect(onA.conflicts.count == 1)
    }

    @Test func deletionsReplicate() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await pair.a.putDocuments(count: 10, prefix: "d")
        _ = await pair.replicate(from: pair.a, to: pair.b)
        for n in 0..<4 {
            let id = "d\(n)"
            try await pair.a.delete(id: id, revision: try pair.a.document(id: id).revision)
        }
        let status = await pair.replicate(from: pair.a, to: pair.b)
        #expect(status.docsWritten == 4)
        #expect(try pair.b.info().docCount == 6)
        #expect(try pair.b.info().deletedDocCount == 4)
        #expect(throws: StoreError.self) { try pair.b.document(id: "d0") }
        try await ReplicationTesting.expectSameDocuments(pair.a, pair.b)
    }

    @Test func attachmentsArriveByteForByteAndUnchangedOnesAreNotResent() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        let big = ReplicationTesting.randomBytes(3 << 20)
        let small = ReplicationTesting.randomBytes(1000)
        try await pair.a.put([
            "_id": "files", "title": "binary",
            "_attachments": .object([
                "big.bin": .object(["content_type": "application/octet-stream", "data": .string(Data(big).base64EncodedString())]),
                "small.bin": .object(["content_type": "image/png", "data": .string(Data(small).base64EncodedString())]),
            ]),
        ])
        _ = await pair.replicate(from: pair.a, to: pair.b)
        let copied = try pair.b.document(id: "files")
        #expect(try pair.b.attachmentContent(try pair.b.attachment(documentID: "files", name: "big.bin")) == big)
        #expect(try pair.b.attachmentContent(try pair.b.attachment(documentID: "files", name: "small.bin")) == small)
        #expect(copied.attachments.first { $0.name == "small.bin" }?.contentType == "image/png")

        // A new revision that keeps the attachments: they go as stubs and still resolve.
        let current = try pair.a.document(id: "files")
        try await pair.a.put(.object(current.json().objectValue!.withMembers(["title": "edited"])))
        let source = InspectedEndpoint(LocalEndpoint(pair.a))
        let status = await Replicator(ReplicationConfiguration(source: source, target: LocalEndpoint(pair.b))).run()
        #expect(status.docsWritten == 1)
        let sent = try #require(source.fetchedRevisions.first?.json["_attachments"])
        #expect(sent["big.bin"]?["stub"] == true)
        #expect(sent["big.bin"]?["data"] == nil)
        let edited = try pair.b.document(id: "files")
        #expect(edited.body["title"] == "edited")
        #expect(try pair.b.attachmentContent(try pair.b.attachment(documentID: "files", name: "big.bin")) == big)
    }

    @Test func filtersBySelectorAndByDocumentIDs() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        for n in 0..<20 {
            try await pair.a.put(["_id": .string("f\(n)"), "kind": n % 2 == 0 ? "even" : "odd", "n": .number(Double(n))])
        }
        var configuration = ReplicationConfiguration(source: LocalEndpoint(pair.a), target: LocalEndpoint(pair.b))
        configuration.filter = .selector(["kind": "even"])
        let bySelector = await Replicator(configuration).run()
        #expect(bySelector.docsWritten == 10)
        #expect(try pair.b.info().docCount == 10)
        #expect(try pair.b.document(id: "f4").body["kind"] == "even")

        configuration.filter = .documentIDs(["f1", "f3", "nope"])
        let byIDs = await Replicator(configuration).run()
        #expect(byIDs.docsWritten == 2)
        #expect(try pair.b.info().docCount == 12)
        #expect(try pair.b.document(id: "f3").body["kind"] == "odd")
    }

    @Test func continuousReplicationPicksUpNewWritesAndGoesIdle() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        var configuration = ReplicationConfiguration(source: LocalEndpoint(pair.a), target: LocalEndpoint(pair.b))
        configuration.continuous = true
        configuration.checkpointInterval = .milliseconds(200)
        let replicator = Replicator(configuration)
        let updates = replicator.statusUpdates()
        let seen = Task {
            var activities: [ReplicationActivity] = []
            for await status in updates where activities.last != status.activity { activities.append(status.activity) }
            return activities
        }
        replicator.start()
        try await ReplicationTesting.waitFor(replicator, "idle") { $0.activity == .idle }
        try await pair.a.put(["_id": "late", "v": 1])
        try await ReplicationTesting.waitFor(replicator, "the new document") { $0.docsWritten == 1 && $0.activity == .idle }
        #expect(try pair.b.document(id: "late").body["v"] == 1)
        try await ReplicationTesting.waitFor(replicator, "a checkpoint") { $0.checkpointedSequence != nil && $0.checkpointedSequence == ChangeSequence(try! pair.a.lastSequence()) }
        await replicator.stop()
        #expect(replicator.status.activity == .stopped)
        #expect(replicator.status.lastError == nil)
        let activities = await seen.value
        // The stream keeps only the newest status for a slow reader, so the first
        // "stopped" may be replaced by what followed it before the reader ran.
        #expect(activities.last == .stopped)
        #expect(activities.contains(.active) && activities.contains(.idle))
    }

    @Test func aRefusedDocumentDoesNotStopTheReplication() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await pair.a.putDocuments(count: 5, prefix: "ok")
        // A target that refuses one document.
        let target = InspectedEndpoint(LocalEndpoint(pair.b), refusing: "ok2")
        let status = await Replicator(ReplicationConfiguration(source: LocalEndpoint(pair.a), target: target)).run()
        #expect(status.lastError == nil)
        #expect(status.docsWritten == 4)
        #expect(status.docWriteFailures == 1)
        #expect(try pair.b.info().docCount == 4)
    }

    /// The agent's replications run at `.utility`, so an application's requests to the node go
    /// first: every call the pipeline makes to either side runs at the priority configured,
    /// not the starting task's (started, not awaited: awaiting it would raise its priority).
    @Test func aReplicationRunsAtThePriorityConfigured() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        try await pair.a.putDocuments(count: 10, prefix: "doc")
        let source = PriorityRecordingEndpoint(inner: LocalEndpoint(pair.a))
        let target = PriorityRecordingEndpoint(inner: LocalEndpoint(pair.b))
        var configuration = ReplicationConfiguration(source: source, target: target)
        configuration.priority = .utility
        let replicator = Replicator(configuration)
        replicator.start()
        let deadline = ContinuousClock.now + .seconds(30)
        while replicator.status.activity != .stopped || replicator.status.docsWritten < 10, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(replicator.status.docsWritten == 10)
        #expect(replicator.status.lastError == nil)
        #expect(source.priorities.withLock { $0 } == [TaskPriority.utility.rawValue])
        #expect(target.priorities.withLock { $0 } == [TaskPriority.utility.rawValue])
    }
}

/// Records the priorities the pipeline's calls run at.
private struct PriorityRecordingEndpoint: ForwardingEndpoint {
    let inner: any Endpoint
    let priorities = Locked<Set<UInt8>>([])

    func changes(_ request: ChangeFeedRequest, deliver: @Sendable (ChangeBatch) async throws -> Void) async throws {
        priorities.withLock { _ = $0.insert(Task.currentPriority.rawValue) }
        try await inner.changes(request, deliver: deliver)
    }

    func missingRevisions(_ revisions: [DocumentRevisions]) async throws(EndpointError) -> [MissingRevisions] {
        priorities.withLock { _ = $0.insert(Task.currentPriority.rawValue) }
        return try await inner.missingRevisions(revisions)
    }

    func revisions(_ requests: [MissingRevisions], staging: AttachmentStaging,
                   deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
        priorities.withLock { _ = $0.insert(Task.currentPriority.rawValue) }
        try await inner.revisions(requests, staging: staging, deliver: deliver)
    }

    func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
        priorities.withLock { _ = $0.insert(Task.currentPriority.rawValue) }
        return try await inner.write(revisions)
    }
}

/// Two databases in a temporary directory.
struct LocalPair {
    let directory: String
    let catalog: Catalog
    let a: Database
    let b: Database

    init() throws {
        directory = FileManager.default.temporaryDirectory.path + "/syncd-replicator-\(UUID().uuidString)"
        catalog = try Catalog(directory: directory)
        a = try catalog.create("a")
        b = try catalog.create("b")
    }

    func replicate(from source: Database, to target: Database, batchSize: Int = 100) async -> ReplicationStatus {
        var configuration = ReplicationConfiguration(source: LocalEndpoint(source), target: LocalEndpoint(target))
        configuration.batchSize = batchSize
        return await Replicator(configuration).run()
    }

    func close() {
        catalog.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Wraps an endpoint: refuses to write one document (as a validation function
/// would), refuses checkpoints with a status (as a read-only database does),
/// and records the revisions read through it.
final class InspectedEndpoint: ForwardingEndpoint, @unchecked Sendable {
    let inner: any Endpoint
    let refused: String?
    let checkpointRefusal: Int?
    private let lock = NSLock()
    private var fetched: [ReplicatedRevision] = []

    init(_ inner: any Endpoint, refusing refused: String? = nil, refusingCheckpointsWith checkpointRefusal: Int? = nil) {
        self.inner = inner
        self.refused = refused
        self.checkpointRefusal = checkpointRefusal
    }

    /// The revisions read from this endpoint so far.
    var fetchedRevisions: [ReplicatedRevision] { lock.withLock { fetched } }

    func putLocalDocument(id: String, _ json: JSON) async throws(EndpointError) -> String {
        if let status = checkpointRefusal {
            throw EndpointError(status: status, error: status == 401 ? "unauthorized" : "forbidden", reason: "read-only", endpoint: displayName)
        }
        return try await inner.putLocalDocument(id: id, json)
    }
    func revisions(_ requests: [MissingRevisions], staging: AttachmentStaging, deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
        try await inner.revisions(requests, staging: staging) { answer in
            if case .found(let revision) = answer { lock.withLock { fetched.append(revision) } }
            await deliver(answer)
        }
    }
    func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
        let accepted = revisions.filter { $0.id != refused }
        var failures = try await inner.write(accepted)
        if accepted.count < revisions.count { failures.append(WriteFailure(id: refused!, error: "forbidden", reason: "refused by the test")) }
        return failures
    }
}

/// Shared helpers of the replication tests.
enum ReplicationTesting {
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// Both databases hold the same documents with the same leaves.
    static func expectSameDocuments(_ a: Database, _ b: Database, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var options = AllDocsOptions()
        options.includeDocuments = true
        let left = try a.allDocs(options).rows.map { ($0.id, $0.revision, $0.document?.body) }
        let right = try b.allDocs(options).rows.map { ($0.id, $0.revision, $0.document?.body) }
        #expect(left.count == right.count, sourceLocation: sourceLocation)
        for (l, r) in zip(left, right) {
            #expect(l.0 == r.0 && l.1 == r.1 && l.2 == r.2, "\(l.0) differs", sourceLocation: sourceLocation)
        }
    }

    /// Waits (up to `seconds`) until the replicator's status satisfies `condition`.
    static func waitFor(_ replicator: Replicator, _ what: String, seconds: Double = 10,
                        _ condition: @escaping @Sendable (ReplicationStatus) -> Bool) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition(replicator.status) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("timed out waiting for \(what); status: \(replicator.status)")
        throw CancellationError()
    }
}

extension Database {
    /// Writes `count` small documents `<prefix>0`, `<prefix>1`, ...
    func putDocuments(count: Int, prefix: String, batch: Int = 1000) async throws {
        var start = 0
        while start < count {
            let end = min(count, start + batch)
            let uploads = (start..<end).map { n in
                DocumentUpload(["_id": .string("\(prefix)\(n)"), "n": .number(Double(n)), "text": "some small document body"])
            }
            for result in try await bulkDocs(uploads) { _ = try result.result.get() }
            start = end
        }
    }
}

extension JSON.Object {
    func withMembers(_ other: JSON.Object) -> JSON.Object {
        var merged = self
        for (key, value) in other { merged[key] = value }
        return merged
    }
}

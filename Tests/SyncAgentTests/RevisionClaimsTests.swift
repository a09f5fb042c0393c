import Foundation
import Locking
import Store
@testable import SyncAgent
import Testing

/// Replications into one target sharing ``RevisionClaims``: a revision two of them find
/// missing at once is fetched and written by one; a run that fails lets go of its claims.
@Suite struct RevisionClaimsTests {
    private static func missing(_ id: String, _ revisions: String...) -> MissingRevisions {
        MissingRevisions(id: id, missing: revisions.map { RevisionID(generation: 1, digest: $0) }, possibleAncestors: [])
    }

    @Test func whatAnotherRunHoldsIsLeftToItAndWhatWasWrittenSinceIsAskedAgain() async throws {
        let claims = RevisionClaims()
        let (first, second) = (claims.owner(), claims.owner())
        guard case .claimed(let ticket?, let free, let held) = claims.claim([Self.missing("a", "x"), Self.missing("b", "y")], by: first, asked: claims.writes) else {
            Issue.record("the first claim failed"); return
        }
        #expect(free.count == 2 && held.isEmpty)
        guard case .claimed(let other?, let otherFree, let otherHeld) = claims.claim([Self.missing("b", "y"), Self.missing("c", "z")], by: second, asked: claims.writes) else {
            Issue.record("the free revision was not claimed"); return
        }
        #expect(otherFree.map(\.id) == ["c"] && otherHeld.map(\.id) == ["b"])
        #expect(claims.heldCount == 3)

        // The same run's later batch leaves out what its earlier batch is writing.
        guard case .claimed(_, let left, let none) = claims.claim([Self.missing("a", "x", "w")], by: first, asked: claims.writes) else {
            Issue.record("a run was blocked by itself"); return
        }
        #expect(left.map(\.missing) == [[RevisionID(generation: 1, digest: "w")]] && none.isEmpty)

        let freed = Flag()
        let revisions = RevisionClaims.revisions(of: otherHeld)
        let waiting = Task {
            await claims.waitUntilFree(revisions)
            freed.set(true)
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(freed.value == nil, "the wait ended while the revision was held")
        let asked = claims.writes
        ticket.release()
        await waiting.value
        #expect(freed.value == true)
        // Asked before the write: the target is asked again.
        guard case .written = claims.claim([Self.missing("b", "y")], by: second, asked: asked) else {
            Issue.record("a revision written since the question was claimed"); return
        }
        guard case .claimed(_?, _, _) = claims.claim([Self.missing("d", "v")], by: second, asked: asked) else {
            Issue.record("a revision not written since the question was refused"); return
        }
        guard case .claimed(_?, _, let stillHeld) = claims.claim([Self.missing("b", "y")], by: second, asked: claims.writes), stillHeld.isEmpty else {
            Issue.record("a released revision stayed held"); return
        }
        other.release()
        claims.releaseAll(of: first)
        claims.releaseAll(of: second)
        #expect(claims.heldCount == 0)
    }

    @Test func aWaitEndsWhenItsTaskIsCancelled() async throws {
        let claims = RevisionClaims()
        guard case .claimed = claims.claim([Self.missing("a", "x")], by: claims.owner(), asked: claims.writes),
              case .claimed(nil, _, let held) = claims.claim([Self.missing("a", "x")], by: claims.owner(), asked: claims.writes) else {
            Issue.record("claims did not conflict"); return
        }
        let revisions = RevisionClaims.revisions(of: held)
        let ended = Locked(false)
        let waiting = Task {
            await claims.waitUntilFree(revisions)
            ended.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!ended.withLock { $0 }, "the wait ended while the revision was held")
        waiting.cancel()
        // Polled, not awaited: a wait that ignored cancellation fails here instead of hanging the suite.
        let deadline = ContinuousClock.now + .seconds(10)
        while !ended.withLock({ $0 }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(ended.withLock { $0 }, "the wait did not end on cancellation")
    }

    @Test func twoPullsOfTheSameDocumentsIntoOneDatabaseWriteEachRevisionOnce() async throws {
        let count = 600
        for shared in [false, true] {
            let beds = try ThreeDatabases()
            defer { beds.close() }
            try await beds.first.putDocuments(count: count, prefix: "doc")
            _ = await beds.replicate(from: beds.first, to: beds.second)
            let claims = shared ? RevisionClaims() : nil
            async let one = beds.replicate(from: beds.first, to: beds.target, claims: claims)
            async let two = beds.replicate(from: beds.second, to: beds.target, claims: claims)
            let (a, b) = await (one, two)
            #expect(a.lastError == nil && b.lastError == nil)
            #expect(a.completed == count && b.completed == count, "a pull left changes behind")
            #expect(try beds.target.info().docCount == count)
            try await ReplicationTesting.expectSameDocuments(beds.first, beds.target)
            let written = a.docsWritten + b.docsWritten
            if shared {
                #expect(written == count, "\(written) revisions written for \(count)")
                #expect(claims?.heldCount == 0)
            } else {
                // Without claims both pulls diff before either writes: the test would see it.
                #expect(written > count + count / 2, "the slow target did not make the pulls overlap (\(written))")
            }
        }
    }

    @Test func aPullThatFailsLetsGoAndTheOtherFetchesWhatItHeld() async throws {
        let count = 300
        let beds = try ThreeDatabases()
        defer { beds.close() }
        try await beds.first.putDocuments(count: count, prefix: "doc")
        _ = await beds.replicate(from: beds.first, to: beds.second)
        let claims = RevisionClaims()
        async let failing = beds.replicate(from: beds.first, to: beds.target, claims: claims, failingWrites: true)
        try await Task.sleep(for: .milliseconds(20))
        async let other = beds.replicate(from: beds.second, to: beds.target, claims: claims)
        let (failed, pulled) = await (failing, other)
        #expect(failed.lastError != nil)
        #expect(pulled.lastError == nil)
        #expect(pulled.completed == count)
        #expect(try beds.target.info().docCount == count)
        #expect(claims.heldCount == 0)
    }

    @Test func aHolderThatNeverLetsGoHoldsAPullUpOnlyForTheLongestWait() async throws {
        let beds = try ThreeDatabases()
        defer { beds.close() }
        try await beds.first.putDocuments(count: 50, prefix: "doc")
        let claims = RevisionClaims(longestWait: .seconds(1))
        let revision = try beds.first.document(id: "doc7").revision
        guard case .claimed = claims.claim([MissingRevisions(id: "doc7", missing: [revision], possibleAncestors: [])], by: claims.owner(), asked: claims.writes) else {
            Issue.record("the claim failed"); return
        }
        let started = ContinuousClock.now
        let pulled = await beds.replicate(from: beds.first, to: beds.target, claims: claims)
        #expect(pulled.lastError == nil)
        #expect(pulled.docsWritten == 50, "the held revision was not fetched after the wait")
        // The part sent ahead of the wait counts too.
        #expect(pulled.missingRevisionsFound == 50)
        #expect(ContinuousClock.now - started >= claims.longestWait)
        #expect(claims.heldCount == 1, "only the stuck holder's claim is left")
    }
}

/// Two sources (a ``LocalPair``'s) and a target whose writes are slow, so that pulls into it overlap.
private struct ThreeDatabases {
    let pair: LocalPair
    let target: Database
    var first: Database { pair.a }
    var second: Database { pair.b }

    init() throws {
        pair = try LocalPair()
        target = try pair.catalog.create("target")
    }

    func replicate(from source: Database, to target: Database, claims: RevisionClaims? = nil,
                   failingWrites: Bool = false) async -> ReplicationStatus {
        let slow = SlowTarget(inner: LocalEndpoint(target), failing: failingWrites)
        var configuration = ReplicationConfiguration(source: LocalEndpoint(source), target: target === self.target ? slow : LocalEndpoint(target))
        configuration.batchSize = 100
        configuration.claims = claims
        configuration.retry.oneShotAttempts = 1
        return await Replicator(configuration).run()
    }

    func close() { pair.close() }
}

/// A target that takes 40 ms for each write, or fails each write.
private struct SlowTarget: ForwardingEndpoint {
    let inner: any Endpoint
    let failing: Bool

    func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
        try? await Task.sleep(for: .milliseconds(40))
        if failing { throw EndpointError(status: 500, error: "test", reason: "the test fails this write", endpoint: displayName) }
        return try await inner.write(revisions)
    }
}

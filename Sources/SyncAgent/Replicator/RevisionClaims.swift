import Locking
import Store

/// The revisions being fetched into one target by the replications that share it, so a
/// revision that two of them find missing at once crosses only one link: an agent pulls a
/// database from every member of its group, and a document written on one member reaches
/// the others over several links within moments.
///
/// A replication's ``RevisionFinder`` claims what a batch lacks before it is fetched; the
/// ``Inserter`` lets go once that is written (the session lets go of all of its claims when
/// it ends). What another replication holds is not claimed: the batch goes on with the
/// rest, waits for that claim to end, then asks the target again; so does a batch naming
/// a revision written since it asked. A claim is let go of without waiting for any other,
/// so no two replications wait on each other. A wait is bounded (``longestWait``): after
/// it, the batch fetches the held revisions too.
public final class RevisionClaims: Sendable {
    /// Who holds a claim: one run of one replication.
    struct Owner: Hashable, Sendable {
        fileprivate let number: Int
    }

    /// What one part of a batch holds, let go of once the part is written.
    struct Ticket: Sendable {
        fileprivate let claims: RevisionClaims
        fileprivate let owner: Owner
        fileprivate let revisions: [Revision]

        /// Lets go of the claims: the part is written (or its run ended).
        func release() { claims.release(self) }
    }

    /// What a batch's claim came to.
    enum Outcome: Sendable {
        /// The ticket holds `free` (`nil`: nothing was free); `held`: what other runs are
        /// fetching. Both leave out what an earlier batch of the same run holds (it writes them first).
        case claimed(Ticket?, free: [MissingRevisions], held: [MissingRevisions])
        /// Some were written since the target was asked: nothing was claimed; ask again.
        case written
    }

    /// A revision of a document.
    struct Revision: Hashable, Sendable {
        let id: String
        let revision: RevisionID
    }

    private struct Waiter {
        let revisions: [Revision]
        let resume: CheckedContinuation<Void, Never>
    }

    private struct State {
        var owners = 0
        var holders: [Revision: Owner] = [:]
        /// Batches written, counted.
        var writes = 0
        /// The revisions of the last ``rememberedWrites`` batches written, by their count.
        var written: [(write: Int, revisions: Set<Revision>)] = []
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }

    private let state = Locked(State())
    private static let rememberedWrites = 64

    /// How long a batch waits for what other replications hold before fetching it too.
    public let longestWait: Duration

    /// No claims yet.
    public init(longestWait: Duration = ReplicatorTuning.claimWait) {
        self.longestWait = longestWait
    }

    /// A new holder, for one run of a replication.
    func owner() -> Owner {
        state.withLock { state in
            state.owners += 1
            return Owner(number: state.owners)
        }
    }

    /// How many batches were written so far: taken before asking the target what it lacks.
    var writes: Int { state.withLock { $0.writes } }

    /// Claims for `owner` what of `missing` no other owner holds, unless some of it was
    /// written since the target was asked (`asked`: ``writes`` then).
    func claim(_ missing: [MissingRevisions], by owner: Owner, asked: Int) -> Outcome {
        state.withLock { state in
            if state.writes > asked {
                let since = state.written.filter { $0.write > asked }
                let forgotten = since.count < state.writes - asked
                if forgotten || missing.contains(where: { document in
                    document.missing.contains { revision in since.contains { $0.revisions.contains(Revision(id: document.id, revision: revision)) } }
                }) {
                    return .written
                }
            }
            var claimed: [Revision] = []
            var free: [MissingRevisions] = []
            var held: [MissingRevisions] = []
            for document in missing {
                var (mine, theirs) = (document, document)
                (mine.missing, theirs.missing) = ([], [])
                for revision in document.missing {
                    let key = Revision(id: document.id, revision: revision)
                    switch state.holders[key] {
                    case nil:
                        state.holders[key] = owner
                        claimed.append(key)
                        mine.missing.append(revision)
                    case owner?: break
                    case _?: theirs.missing.append(revision)
                    }
                }
                if !mine.missing.isEmpty { free.append(mine) }
                if !theirs.missing.isEmpty { held.append(theirs) }
            }
            let ticket = claimed.isEmpty ? nil : Ticket(claims: self, owner: owner, revisions: claimed)
            return .claimed(ticket, free: free, held: held)
        }
    }

    /// The revisions of `missing`, to wait for.
    static func revisions(of missing: [MissingRevisions]) -> [Revision] {
        missing.flatMap { document in document.missing.map { Revision(id: document.id, revision: $0) } }
    }

    /// Returns once none of `revisions` is held (at once if none is), or when the task is cancelled.
    func waitUntilFree(_ revisions: [Revision]) async {
        let number = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if Task.isCancelled || revisions.allSatisfy({ state.holders[$0] == nil }) { return true }
                    state.waiters[number] = Waiter(revisions: revisions, resume: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: number) }?.resume.resume()
        }
    }

    private func release(_ ticket: Ticket) {
        release { state in
            for key in ticket.revisions where state.holders[key] == ticket.owner {
                state.holders.removeValue(forKey: key)
            }
            state.writes += 1
            state.written.append((state.writes, Set(ticket.revisions)))
            if state.written.count > Self.rememberedWrites { state.written.removeFirst() }
        }
    }

    /// Lets go of everything `owner` holds (its run ended).
    func releaseAll(of owner: Owner) {
        release { state in
            state.holders = state.holders.filter { $0.value != owner }
        }
    }

    /// How many revisions are held, for tests.
    var heldCount: Int { state.withLock { $0.holders.count } }

    private func release(_ change: (inout State) -> Void) {
        let freed = state.withLock { state in
            change(&state)
            let free = state.waiters.filter { _, waiter in waiter.revisions.allSatisfy { state.holders[$0] == nil } }
            for number in free.keys { state.waiters.removeValue(forKey: number) }
            return free.values.map(\.resume)
        }
        for resume in freed { resume.resume() }
    }
}

/// One ``RevisionClaims`` per local database, shared by every replication into it that the agent runs.
final class DatabaseClaims: Sendable {
    private let claims = Locked<[String: RevisionClaims]>([:])

    /// The claims on `database`'s revisions.
    func claims(on database: String) -> RevisionClaims {
        claims.withLock { claims in
            if let existing = claims[database] { return existing }
            let made = RevisionClaims()
            claims[database] = made
            return made
        }
    }
}

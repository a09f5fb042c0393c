import AsyncAlgorithms
import JSON
import Logging
import Store

/// Third stage: reads the missing revisions from the source with their
/// history, and only the attachments the target lacks (`_bulk_get`, or
/// `open_revs` where the source has no `_bulk_get`); a first revision the
/// changes feed carried whole is passed on as it came. A large batch is read as
/// a few requests at once, so a remote source can use more than one core.
///
/// Revisions go on to the inserter in parts as they are read: once a part holds
/// more than ``ReplicatorTuning/fetchPartBudget`` bytes of JSON and attachment content, it is
/// sent, so that at most about one budget per parallel request is held. Only the batch's last part
/// completes the batch (see ``ReplicationBatch/isLastPart``).
struct RevisionFetcher: Sendable {
    let source: any Endpoint
    /// Where the target wants attachment content put as it is read.
    let staging: AttachmentStaging
    let parallelism: Int
    /// The target's ``Endpoint/recentWinners``: a carried revision the target has by now
    /// (another pull wrote it since the diff) is neither parsed nor passed on.
    let targetWinners: (@Sendable (_ revision: RevisionID, _ id: String) -> Bool)?
    let logger: Logger

    func run(from input: AsyncChannel<ReplicationBatch>, into output: AsyncChannel<ReplicationBatch>) async throws {
        defer { output.finish() }
        for await batch in input {
            var last = batch
            var (carried, toRead) = Self.carried(batch)
            for change in carried {
                if let targetWinners, targetWinners(change.revisions[0], change.id) { continue }
                if let revision = change.firstRevision {
                    last.fetched.append(.found(revision))
                } else {
                    toRead.append(MissingRevisions(id: change.id, missing: change.revisions))
                }
            }
            if !toRead.isEmpty {
                var reading = batch
                reading.missing = toRead
                let first = try await fetch(toRead, of: reading, into: output)
                last.fetched += first.held
                try await retry(first.failures, of: reading, into: output, last: &last)
            }
            await output.send(last)
        }
    }

    /// The missing documents whose change carried their only missing revision whole (a first
    /// revision in ``ChangedDocument/carriedDocument``), and the rest, to be read from the
    /// source. A document the batch names more than once, or that lacks more than the carried
    /// revision, is read as a whole. The carried texts are parsed only in ``run``, for what the
    /// target still lacks then; one that is not such a revision is read from the source after all.
    /// Only the missing documents are looked up: in a group most of a feed's changes are
    /// revisions the target has already, and a batch often lacks none of them.
    static func carried(_ batch: ReplicationBatch) -> (carried: [ChangedDocument], toRead: [MissingRevisions]) {
        guard !batch.missing.isEmpty else { return ([], []) }
        var named: [String: (times: Int, change: ChangedDocument?)] = Dictionary(minimumCapacity: batch.missing.count)
        for missing in batch.missing { named[missing.id] = (0, nil) }
        for change in batch.changes.changes {
            guard let index = named.index(forKey: change.id) else { continue }
            named.values[index] = (named.values[index].times + 1, change)
        }
        var carried: [ChangedDocument] = []
        var toRead: [MissingRevisions] = []
        for missing in batch.missing {
            if case let (times, change?)? = named[missing.id], times == 1, change.carriedDocument != nil, change.onlyRevisionIsFirst,
               missing.missing == change.revisions {
                carried.append(change)
            } else {
                toRead.append(missing)
            }
        }
        return (carried, toRead)
    }

    /// Reads the revisions that failed once more; one that fails again stops the replication,
    /// so no checkpoint passes a revision that was neither written nor refused by the target.
    private func retry(
        _ failures: [FetchedRevision], of batch: ReplicationBatch, into output: AsyncChannel<ReplicationBatch>,
        last: inout ReplicationBatch
    ) async throws {
        var failedIDs = Set<String>()
        for case .failed(let id, _, _) in failures { failedIDs.insert(id) }
        guard !failedIDs.isEmpty else { return }
        let again = try await fetch(batch.missing.filter { failedIDs.contains($0.id) }, of: batch, into: output)
        for case .failed(let id, let revision, let reason) in again.failures {
            throw EndpointError.badResponse(source.displayName,
                                            "cannot read \(id) \(revision?.description ?? "") from the source: \(reason)")
        }
        last.fetched += again.held
    }

    /// Reads `missing` in up to `parallelism` requests at once, passing full parts on as they
    /// fill. Returns what the requests' parts held at their end, and the revisions that failed.
    private func fetch(
        _ missing: [MissingRevisions], of batch: ReplicationBatch, into output: AsyncChannel<ReplicationBatch>
    ) async throws(EndpointError) -> (held: [FetchedRevision], failures: [FetchedRevision]) {
        let parts = min(max(1, parallelism), missing.count / ReplicatorTuning.documentsPerFetch + 1)
        let size = (missing.count + parts - 1) / parts
        let chunks = stride(from: 0, to: missing.count, by: size).map { Array(missing[$0..<min($0 + size, missing.count)]) }
        let outcomes = await withTaskGroup(of: Result<Part, EndpointError>.self) { group in
            for chunk in chunks {
                group.addTask { [self] in
                    var part = Part(batch: batch)
                    do throws(EndpointError) {
                        try await source.revisions(chunk, staging: staging) { await part.add($0, fetcher: self, output: output) }
                        return .success(part)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var outcomes: [Result<Part, EndpointError>] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        var held: [FetchedRevision] = []
        var failures: [FetchedRevision] = []
        for outcome in outcomes {
            let part = try outcome.get()
            held += part.revisions
            failures += part.failures
        }
        return (held, failures)
    }

    /// The revisions one request has read and not yet passed on.
    private struct Part {
        let batch: ReplicationBatch
        var revisions: [FetchedRevision] = []
        var bytes = 0
        /// Revisions that could not be read: held back, to be read again before the batch completes.
        var failures: [FetchedRevision] = []

        init(batch: ReplicationBatch) {
            self.batch = batch
        }

        mutating func add(_ revision: FetchedRevision, fetcher: RevisionFetcher, output: AsyncChannel<ReplicationBatch>) async {
            switch revision {
            case .failed(let id, let failed, let reason):
                fetcher.logger.warning("cannot read a revision from the source; it is read again before the batch completes", metadata: [
                    "doc": "\(id)", "rev": "\(failed?.description ?? "?")", "reason": "\(reason)",
                ])
                failures.append(revision)
                return
            case .refused:
                break
            case .missing(let id, let gone):
                fetcher.logger.info("a revision is gone from the source since the diff", metadata: [
                    "doc": "\(id)", "rev": "\(gone?.description ?? "?")",
                ])
            case .found(let found):
                // Staged files count too: a part holding large ones goes on at once, to be written.
                bytes += found.json.heldBytes + found.files.values.reduce(0) { $0 + $1.length }
            }
            revisions.append(revision)
            guard bytes >= ReplicatorTuning.fetchPartBudget else { return }
            var part = batch
            part.fetched = revisions
            part.isLastPart = false
            part.claim = nil  // the claim goes with the last part read
            revisions = []
            bytes = 0
            await output.send(part)
        }
    }
}

extension JSON {
    /// About how many bytes the value holds: its strings' bytes, and a few for every other value.
    var heldBytes: Int {
        switch self {
        case .string(let text): 16 + text.utf8.count
        case .array(let values): values.reduce(16) { $0 + $1.heldBytes }
        case .object(let object): object.reduce(16) { $0 + 16 + $1.key.utf8.count + $1.value.heldBytes }
        default: 16
        }
    }
}

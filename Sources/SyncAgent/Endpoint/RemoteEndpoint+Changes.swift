import AsyncHTTPClient
import JSON
import Locking
import NIOCore
import NIOHTTP1
import Store

extension RemoteEndpoint {
    /// Reads `_changes` with `style=all_docs`: pages of the normal feed to the
    /// end, then, when continuous, the continuous feed from there on.
    public func changes(_ request: ChangeFeedRequest, deliver: @Sendable (ChangeBatch) async throws -> Void) async throws {
        var since = request.since
        let limit = max(1, request.batchSize)
        while true {
            try Task.checkCancellation()
            var query = [("style", "all_docs"), ("feed", "normal"), ("since", since.description), ("limit", String(limit))]
            let (method, body) = filterParameters(request, into: &query)
            let page = try await changesPage(method, query: query, body: body, targetWinners: request.targetWinners)
            let last = page.lastSequence ?? page.lastRowSequence ?? since
            let pending = page.pending
            let caughtUp = page.rows.count + page.alreadyHeld < limit || pending == 0
            if !caughtUp, last == since {
                throw EndpointError.badResponse(displayName, "_changes sent a full page but stayed at since=\(since)")
            }
            try await deliver(ChangeBatch(changes: page.rows, lastSequence: last, pending: pending, caughtUp: caughtUp,
                                          alreadyHeld: page.alreadyHeld))
            since = last
            if caughtUp { break }
        }
        guard request.continuous else { return }
        while true {
            try Task.checkCancellation()
            since = try await followContinuousFeed(request, since: since, deliver: deliver)
        }
    }

    /// Reads one connection of `feed=continuous`, delivering what each arriving
    /// chunk completes; returns the position reached when the server ends the feed.
    /// A feed that sends no byte (not even a heartbeat) for ``ReplicatorTuning/silenceLimit(heartbeatMilliseconds:)``
    /// while it is being read is dead: its connection is closed and the feed fails as unreachable.
    private func followContinuousFeed(
        _ request: ChangeFeedRequest, since start: ChangeSequence, deliver: @Sendable (ChangeBatch) async throws -> Void
    ) async throws -> ChangeSequence {
        let silence = ReplicatorTuning.silenceLimit(heartbeatMilliseconds: request.heartbeatMilliseconds)
        let watch = FeedWatch()
        return try await withoutActuallyEscaping(deliver) { deliver in
            try await withThrowingTaskGroup(of: ChangeSequence?.self) { group in
                group.addTask {
                    try await self.readContinuousFeed(request, since: start, watch: watch, deliver: deliver)
                }
                group.addTask {
                    try await watch.expire(after: silence)
                    throw EndpointError.unreachable(self.displayName, "no answer for \(silence.spoken) on the continuous changes feed")
                }
                defer { group.cancelAll() }
                while let result = try await group.next() {
                    if let since = result { return since }
                }
                throw CancellationError()
            }
        }
    }

    /// The reading half of ``followContinuousFeed``: the watch is told whenever it waits for the server.
    private func readContinuousFeed(
        _ request: ChangeFeedRequest, since start: ChangeSequence, watch: FeedWatch, deliver: @Sendable (ChangeBatch) async throws -> Void
    ) async throws -> ChangeSequence {
        // `include_docs`: a new document's first revision then arrives whole with its change
        // (see ``firstRevision(of:in:)``), and a lone write reaches the target without a `_bulk_get`.
        var query = [("style", "all_docs"), ("feed", "continuous"), ("since", start.description),
                     ("heartbeat", String(request.heartbeatMilliseconds)), ("include_docs", "true")]
        let (method, body) = filterParameters(request, into: &query)
        watch.waiting()
        let response = try await send(method, databasePath + "/_changes", query: query, body: body,
                                      accept: "application/json", timeout: ReplicatorTuning.continuousFeedTimeout)
        guard response.status.code < 400 else { throw await error(answering: response) }
        var since = start
        var lines = FeedLineSplitter(limit: ReplicatorTuning.longestChangeLine)
        var rows: [ChangedDocument] = []
        var alreadyHeld = 0
        var endedWithLastSequence = false
        do {
            var chunks = response.body.makeAsyncIterator()
            while true {
                watch.waiting()
                guard let chunk = try await chunks.next() else { break }
                watch.answered()
                var ended = false
                for line in lines.lines(in: chunk.readableBytesView) {
                    let read: FeedLine
                    do {
                        read = try JSONReader.read(line) { reader throws in
                            try feedLine(&reader, keepingDocument: line.count <= ReplicatorTuning.longestCarriedLine,
                                         targetWinners: request.targetWinners)
                        }
                    } catch let error as EndpointError {
                        throw error
                    } catch {
                        throw EndpointError.badResponse(displayName, "continuous _changes sent a line that is not JSON: \(error)")
                    }
                    let row: ChangedDocument
                    switch read {
                    case .change(let change): row = change
                    case .held(let sequence):
                        alreadyHeld += 1
                        since = sequence
                        continue
                    case .end(let last):
                        since = last
                        ended = true
                        continue
                    }
                    // A full batch goes on once a row follows it: the chunk's last batch is the caught-up one,
                    // and a replication goes idle after it even when the chunk ends on a full batch.
                    if rows.count >= request.batchSize {
                        try await deliver(ChangeBatch(changes: rows, lastSequence: since, pending: nil, caughtUp: false, alreadyHeld: alreadyHeld))
                        rows.removeAll(keepingCapacity: true)
                        alreadyHeld = 0
                    }
                    rows.append(row)
                    since = row.sequence
                }
                do { try lines.checkUnfinished() } catch {
                    throw EndpointError.badResponse(
                        displayName, "continuous _changes sent a line over \(ReplicatorTuning.longestChangeLine >> 20) MiB")
                }
                if !rows.isEmpty || alreadyHeld > 0 {
                    try await deliver(ChangeBatch(changes: rows, lastSequence: since, pending: nil, caughtUp: true, alreadyHeld: alreadyHeld))
                    rows.removeAll(keepingCapacity: true)
                    alreadyHeld = 0
                }
                if ended {
                    endedWithLastSequence = true
                    break
                }
            }
        } catch let error as EndpointError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw EndpointError.unreachable(displayName, "the continuous changes feed broke: \(Self.describe(error))")
        }
        // CouchDB ends a continuous feed with its last_seq: one cut short is a broken connection,
        // retried after the backoff, never reopened at once in a loop.
        guard endedWithLastSequence else {
            throw EndpointError.unreachable(displayName, "the continuous changes feed ended without a last_seq")
        }
        return since
    }

    /// Adds `filter=` for the request's filter, and syncd's first-hand parameter when asked
    /// for, and returns the method and body that carry the filter's argument.
    private func filterParameters(_ request: ChangeFeedRequest, into query: inout [(String, String)]) -> (HTTPMethod, [UInt8]?) {
        if request.firstHandOnly { query.append((ChangeFeedRequest.firstHandParameter, "true")) }
        switch request.filter {
        case nil:
            return (.GET, nil)
        case .documentIDs(let ids)?:
            query.append(("filter", "_doc_ids"))
            return (.POST, JSON.object(["doc_ids": .array(ids.map { .string($0) })]).serializedBytes())
        case .selector(let selector)?:
            query.append(("filter", "_selector"))
            return (.POST, JSON.object(["selector": selector]).serializedBytes())
        case .function(let name, let parameters)?:
            // As CouchDB's replicator: the function's parameters go in the query, strings as they are.
            query.append(("filter", name))
            for (key, value) in parameters { query.append((key, value.stringValue ?? value.serialized())) }
            return (.GET, nil)
        }
    }

    /// The revision a row's `doc` carries whole, when nothing more is needed to replicate it:
    /// the document's only leaf, a first revision (no history), not deleted, without attachments
    /// (whose content a feed never carries), and the very revision the row names. Anything
    /// else, or a `doc` that does not agree with its row, is fetched the usual way.
    static func firstRevision(of row: ChangedDocument, in doc: JSON?) -> ReplicatedRevision? {
        guard row.onlyRevisionIsFirst, let revision = row.revisions.first, case .object(var body)? = doc, body["_id"]?.stringValue == row.id,
              body["_rev"]?.stringValue == revision.description,
              body["_attachments"] == nil, body["_deleted"] == nil, body["_revisions"] == nil
        else { return nil }
        body["_revisions"] = .object(["start": .number(1), "ids": .array([.string(revision.digest)])])
        return ReplicatedRevision(id: row.id, revision: revision, json: .object(body))
    }

    /// One page of the normal feed: its rows (those `targetWinners` holds only counted),
    /// the last row's sequence, `last_seq` and `pending`.
    private func changesPage(
        _ method: HTTPMethod, query: [(String, String)], body: [UInt8]?,
        targetWinners: ChangeFeedRequest.TargetWinners?
    ) async throws(EndpointError)
        -> (rows: [ChangedDocument], alreadyHeld: Int, lastRowSequence: ChangeSequence?, lastSequence: ChangeSequence?, pending: Int?) {
        let path = databasePath + "/_changes"
        let (status, _, bytes) = try await request(method, path, query: query, body: body)
        guard status < 400 else { throw error(status: status, body: try? JSON(parsing: bytes.readableBytesView)) }
        var rows: [ChangedDocument]?
        var alreadyHeld = 0
        var lastRow: ChangeSequence?
        var last: ChangeSequence?
        var pending: Int?
        do {
            _ = try JSONReader.read(bytes.readableBytesView) { answer in
                try answer.members { name, value in
                    switch name {
                    case "results":
                        var read: [ChangedDocument] = []
                        (alreadyHeld, lastRow) = (0, nil)
                        guard try value.elements({ row in
                            switch try feedLine(&row, keepingDocument: false, targetWinners: targetWinners) {
                            case .change(let change):
                                read.append(change)
                                lastRow = change.sequence
                            case .held(let sequence):
                                alreadyHeld += 1
                                lastRow = sequence
                            case .end:
                                throw EndpointError.badResponse(displayName, "a _changes row lacks seq, id or changes")
                            }
                        }) else { return }
                        rows = read
                    case "last_seq": last = ChangeSequence(try value.value())
                    case "pending": pending = try value.value().countValue
                    default: break
                    }
                }
            }
        } catch let error as EndpointError {
            throw error
        } catch {
            throw .badResponse(displayName, "\(method) \(path) answered \(status) without JSON")
        }
        guard let rows else { throw .badResponse(displayName, "_changes answered without results") }
        return (rows, alreadyHeld, lastRow, last, pending)
    }

    /// What one line of a continuous feed, or one `results` entry, holds.
    private enum FeedLine {
        /// A change.
        case change(ChangedDocument)
        /// A change naming only a revision the target has as its winner: its sequence.
        case held(ChangeSequence)
        /// The end of a continuous feed: its `last_seq`.
        case end(ChangeSequence)
    }

    /// Reads one `results` entry of a changes feed, or a continuous feed's last line, building
    /// only what a replication uses: a row's `doc` stays text, kept when `keepingDocument`
    /// and the row names one first revision (a queue of edits holds no bodies), and parsed
    /// only if the target lacks the revision. A row naming only a revision `targetWinners`
    /// holds is not built at all: its revision is asked about as the text it came as, and its
    /// `doc` is skipped when it comes after `id` and `changes`, as CouchDB sends it. Local
    /// documents are never in a feed: one listed there is refused, not replicated.
    private func feedLine(
        _ reader: inout JSONReader, keepingDocument: Bool, targetWinners: ChangeFeedRequest.TargetWinners?
    ) throws -> FeedLine {
        var sequence: JSON?
        var id: String?
        var listsChanges = false
        var revisionCount = 0
        /// The first revision's text, in place, when it came as plain ASCII: made a revision only if needed.
        var firstText: UnsafeBufferPointer<UInt8>?
        /// The revisions not kept as `firstText`, in order.
        var others: [RevisionID] = []
        var deleted = false
        var doc: [UInt8]?
        var last: JSON?
        var badRevision = false
        /// Whether the target has the row's only revision, once known.
        var held: Bool?
        func isHeld() -> Bool {
            if let held { return held }
            guard let targetWinners, let id, let firstText, revisionCount == 1, !badRevision else { return false }
            let answer = targetWinners(firstText, id)
            held = answer
            return answer
        }
        let isObject = try reader.members { name, value in
            switch name {
            case "seq": sequence = try value.value()
            case "id": id = try value.string(); held = nil
            case "deleted": deleted = try value.bool() ?? false
            case "doc" where keepingDocument && !isHeld(): doc = try value.text()
            case "last_seq": last = try value.value()
            case "changes":
                // A repeated member counts once, the last, as in ``JSON/init(parsing:)``.
                (badRevision, revisionCount, firstText, others, held) = (false, 0, nil, [], nil)
                listsChanges = try value.elements { change in
                    var text: UnsafeBufferPointer<UInt8>?
                    var revision: RevisionID?
                    _ = try change.members { name, value in
                        guard name == "rev" else { return }
                        text = value.asciiString()
                        revision = text == nil ? try value.string().flatMap(RevisionID.init) : nil
                    }
                    if let text, revisionCount == 0 {
                        firstText = text
                    } else if let read = revision ?? text.flatMap(RevisionID.init(utf8:)) {
                        others.append(read)
                    } else {
                        badRevision = true
                    }
                    revisionCount += 1
                }
            default: break
            }
        }
        if let last { return .end(ChangeSequence(last)) }
        guard isObject, let id, let sequence, listsChanges else {
            throw EndpointError.badResponse(displayName, "a _changes row lacks seq, id or changes")
        }
        guard !id.hasPrefix("_local/") else { throw EndpointError.badResponse(displayName, "_changes listed the local document \(id)") }
        if isHeld() { return .held(ChangeSequence(sequence)) }
        var revisions = others
        if let firstText {
            if let first = RevisionID(utf8: firstText) { revisions.insert(first, at: 0) } else { badRevision = true }
        }
        guard !badRevision else { throw EndpointError.badResponse(displayName, "a _changes row has an invalid rev") }
        var row = ChangedDocument(sequence: ChangeSequence(sequence), id: id, revisions: revisions, deleted: deleted)
        if row.onlyRevisionIsFirst { row.carriedDocument = doc }
        return .change(row)
    }
}

/// When a continuous feed's reader began waiting for the server, if it is waiting:
/// time spent handing changes on (a full pipeline) is not silence.
private final class FeedWatch: Sendable {
    private let since = Locked<ContinuousClock.Instant?>(nil)

    /// The reader waits for the server from now on.
    func waiting() { since.withLock { $0 = .now } }

    /// The server sent something; the reader is busy with it.
    func answered() { since.withLock { $0 = nil } }

    /// Returns once the reader has waited `limit` without an answer; sleeps meanwhile.
    func expire(after limit: Duration) async throws {
        while true {
            let waitingSince = since.withLock { $0 }
            if let waitingSince, ContinuousClock.now - waitingSince >= limit { return }
            try await Task.sleep(until: (waitingSince ?? .now) + limit, clock: .continuous)
        }
    }
}

import Locking

/// The changes read and not yet taken by the revision finder: the pipeline's
/// first channel, as CouchDB's replicator has its work queue.
///
/// The reader appends whatever the feed gives (a page, or the few rows of a
/// continuous feed's chunk) and waits only while the queue is full. The finder
/// takes everything that has arrived, up to a batch, as soon as it is ready for
/// more. So a burst travels in full batches, and a lone change goes out alone
/// and at once: no timer waits for a batch to fill.
final class ChangeQueue: Sendable {
    private struct State {
        var rows: [ChangedDocument] = []
        /// Index of the first row not taken yet.
        var head = 0
        /// Where the feed stood after the newest batch appended.
        var lastSequence: ChangeSequence?
        var pending: Int?
        var caughtUp = false
        /// Changes the reader left out since the last take (``ChangeBatch/alreadyHeld``).
        var alreadyHeld = 0
        /// Something (rows, or only a newer position) was appended since the last take.
        var hasNews = false
        var finished = false
        var reader: CheckedContinuation<Void, Never>?
        var finder: CheckedContinuation<Void, Never>?

        var count: Int { rows.count - head }
    }

    private let state = Locked(State())
    /// Rows held before the reader waits.
    let capacity: Int

    /// A queue that holds about `capacity` rows before the reader waits.
    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Appends a batch read from the feed; waits while the queue is full.
    func append(_ batch: ChangeBatch) async throws {
        while true {
            try Task.checkCancellation()
            let appended = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                guard state.count < capacity || state.finished else { return (false, nil) }
                if state.head > 0 && state.head >= state.rows.count / 2 {
                    state.rows.removeFirst(state.head)
                    state.head = 0
                }
                if state.rows.isEmpty { state.rows = batch.changes } else { state.rows += batch.changes }
                state.lastSequence = batch.lastSequence
                state.pending = batch.pending
                state.caughtUp = batch.caughtUp
                state.alreadyHeld += batch.alreadyHeld
                state.hasNews = true
                defer { state.finder = nil }
                return (true, state.finder)
            }
            if appended.0 {
                appended.1?.resume()
                return
            }
            await wait(.reader)
        }
    }

    /// Ends the queue: the finder takes what is left, then ``take(upTo:)`` returns nil.
    func finish() {
        let waiting = state.withLock { state in
            state.finished = true
            defer { state.reader = nil; state.finder = nil }
            return [state.reader, state.finder]
        }
        for continuation in waiting { continuation?.resume() }
    }

    /// Everything appended and not yet taken, up to `limit` rows, as one batch; waits until
    /// something was appended. A batch that takes every row carries the feed's newest
    /// position (past rows a filter or the reader left out); one cut short ends at its last
    /// row. The rows the reader left out so far are counted with the batch taken next.
    /// Nil once the queue is finished and empty.
    func take(upTo limit: Int) async throws -> ChangeBatch? {
        let limit = max(1, limit)
        while true {
            try Task.checkCancellation()
            let (batch, done, reader) = state.withLock { state -> (ChangeBatch?, Bool, CheckedContinuation<Void, Never>?) in
                guard state.hasNews, let lastSequence = state.lastSequence else { return (nil, state.finished, nil) }
                let taken = min(limit, state.count)
                var batch: ChangeBatch
                if taken == state.count {
                    // Everything goes: the rows move out whole, none is copied.
                    state.rows.removeFirst(state.head)
                    let rows = state.rows
                    state.rows = []
                    batch = ChangeBatch(changes: rows, lastSequence: lastSequence, pending: state.pending, caughtUp: state.caughtUp)
                    state.head = 0
                    state.hasNews = false
                } else {
                    let rows = Array(state.rows[state.head..<(state.head + taken)])
                    state.head += taken
                    batch = ChangeBatch(changes: rows, lastSequence: rows[rows.count - 1].sequence,
                                        pending: state.pending.map { $0 + state.count }, caughtUp: false)
                }
                batch.alreadyHeld = state.alreadyHeld
                state.alreadyHeld = 0
                guard state.count < capacity else { return (batch, false, nil) }
                defer { state.reader = nil }
                return (batch, false, state.reader)
            }
            reader?.resume()
            if let batch { return batch }
            if done { return nil }
            await wait(.finder)
        }
    }

    private enum Side { case reader, finder }

    /// Waits until the other side resumes `side`, the queue finishes, or the task is cancelled.
    private func wait(_ side: Side) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.finished || Task.isCancelled { return true }
                    switch side {
                    case .reader:
                        if state.count < capacity { return true }
                        state.reader = continuation
                    case .finder:
                        if state.hasNews { return true }
                        state.finder = continuation
                    }
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiting = state.withLock { state in
                switch side {
                case .reader: defer { state.reader = nil }; return state.reader
                case .finder: defer { state.finder = nil }; return state.finder
                }
            }
            waiting?.resume()
        }
    }
}

import AsyncAlgorithms
import AsyncHTTPClient
import Locking
import NIOCore

/// An answer's body, read on a task of its own and cut when it makes no progress.
///
/// The reader takes the chunks from ``body`` and marks each complete result it reads (a row,
/// a part) with ``progressed()``; every ``ReplicatorTuning/progressBytes`` that arrive count as
/// progress too (a large attachment on a slow link). Only the time spent waiting for the
/// server counts, not the reader's own. After `limit` of waiting without progress the request
/// is cancelled and reading fails as `unreachable`, naming the answer: a source that drips
/// bytes holds a replication no longer than that, and the replication retries with back-off.
final class AnswerProgress: Sendable {
    /// The answer's chunks, to read in place of the response's body.
    let body: AsyncThrowingChannel<ByteBuffer, any Error>
    /// Waiting time since the last progress: what went before the current wait, when that began,
    /// and the bytes that arrived meanwhile.
    private let waited: Locked<(before: Duration, since: ContinuousClock.Instant?, bytes: Int)>
    private let reading: Task<Void, Never>
    private let watching: Task<Void, Never>

    /// Starts reading `response`'s body, the answer to `what` (`POST /db/_bulk_get`) from `endpoint`.
    init(_ response: HTTPClientResponse, endpoint: String, answering what: String, limit: Duration) {
        let body = AsyncThrowingChannel<ByteBuffer, any Error>()
        let waited = Locked<(before: Duration, since: ContinuousClock.Instant?, bytes: Int)>((.zero, nil, 0))
        self.body = body
        self.waited = waited
        let reading = Task {
            do {
                var chunks = response.body.makeAsyncIterator()
                while true {
                    waited.withLock { $0.since = .now }
                    guard let chunk = try await chunks.next() else { break }
                    waited.withLock { waited in
                        waited.bytes += chunk.readableBytes
                        if waited.bytes >= ReplicatorTuning.progressBytes {
                            waited = (.zero, nil, 0)
                        } else if let since = waited.since {
                            waited = (waited.before + (.now - since), nil, waited.bytes)
                        }
                    }
                    await body.send(chunk)
                }
                body.finish()
            } catch {
                body.fail(error)
            }
        }
        self.reading = reading
        watching = Task {
            while !Task.isCancelled {
                let (before, since, _) = waited.withLock { $0 }
                let spent = before + (since.map { .now - $0 } ?? .zero)
                if since != nil, spent >= limit {
                    // The reader hears why before the cancelled read can fail the body with less.
                    body.fail(EndpointError.unreachable(endpoint, "the answer to \(what) made no progress for \(limit.spoken)"))
                    reading.cancel()
                    return
                }
                // While the reader is busy (not waiting), nothing runs out: look again later.
                try? await Task.sleep(for: since == nil ? max(limit - spent, limit / 4) : limit - spent, clock: .continuous)
            }
        }
    }

    deinit { stop() }

    /// The reader completed a result: the wait starts again from nothing.
    func progressed() {
        waited.withLock { waited in waited = (.zero, waited.since.map { _ in .now }, 0) }
    }

    /// Stops reading (the request is cancelled if its answer has not ended) and watching.
    func stop() {
        reading.cancel()
        watching.cancel()
    }
}

import Locking

/// Tells every subscriber the last committed sequence after each commit.
final class Notifier: Sendable {
    private struct Subscribers: ~Copyable {
        var next = 0
        var continuations: [Int: AsyncStream<UInt64>.Continuation] = [:]
        var finished = false
    }

    private let subscribers = Locked(Subscribers())

    /// A stream of committed sequences; only the newest is kept for a slow consumer.
    func stream() -> AsyncStream<UInt64> {
        let (stream, continuation) = AsyncStream.makeStream(of: UInt64.self, bufferingPolicy: .bufferingNewest(1))
        let id = subscribers.withLock { subscribers -> Int? in
            if subscribers.finished { return nil }
            let id = subscribers.next
            subscribers.next += 1
            subscribers.continuations[id] = continuation
            return id
        }
        if let id {
            continuation.onTermination = { [weak self] _ in
                _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
            }
        } else {
            continuation.finish()
        }
        return stream
    }

    /// Delivers `sequence` to every subscriber.
    func publish(_ sequence: UInt64) {
        let continuations = subscribers.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(sequence) }
    }

    /// Ends every stream.
    func finish() {
        let continuations = subscribers.withLock { subscribers in
            subscribers.finished = true
            defer { subscribers.continuations.removeAll() }
            return Array(subscribers.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}

/// Hands every element to each current subscriber's `AsyncStream`: the one fan-out
/// behind commit notifications, discovery events, replication status and address
/// changes, so each of them keeps only its own rules (buffering, replay, when to end).
///
/// Subscribers are kept under their own lock, because `AsyncStream` calls
/// `onTermination` on whatever thread finishes or cancels a stream.
///
/// ```swift
/// let commits = Broadcast<UInt64>(bufferingPolicy: .bufferingNewest(1))
/// let stream = commits.subscribe()
/// commits.yield(42)
/// ```
public final class Broadcast<Element: Sendable>: Sendable {
    private struct Subscribers: ~Copyable {
        var nextID = 0
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        var finished = false
    }

    private let bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy
    private let subscribers = Locked(Subscribers())

    /// A broadcast whose streams keep what `bufferingPolicy` says for a slow reader.
    public init(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded) {
        self.bufferingPolicy = bufferingPolicy
    }

    /// A new stream that first yields `initial`, then every later element; after
    /// ``finish()``, one that yields `initial` and ends.
    public func subscribe(replaying initial: [Element] = []) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        for element in initial { continuation.yield(element) }
        let subscribed = subscribers.withLock { state in
            guard !state.finished else { return false }
            let id = state.nextID
            state.nextID += 1
            // The stream is not handed out yet, so setting this cannot run the handler here.
            continuation.onTermination = { [weak self] _ in
                _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
            }
            state.continuations[id] = continuation
            return true
        }
        if !subscribed { continuation.finish() }
        return stream
    }

    /// Gives `element` to every subscriber.
    public func yield(_ element: Element) {
        let continuations = subscribers.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(element) }
    }

    /// Ends every stream, and every later one at once: the source is gone for good.
    public func finish() {
        end(forGood: true)
    }

    /// Ends every stream; later subscribers are served as before (the source may start again).
    public func finishSubscribers() {
        end(forGood: false)
    }

    private func end(forGood: Bool) {
        let continuations = subscribers.withLock { state in
            if forGood { state.finished = true }
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}

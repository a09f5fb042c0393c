import Synchronization

/// Hands every element to each current subscriber's AsyncStream: how one
/// producer (a browser, a store, a replication) tells any number of watchers.
///
/// Subscribers are kept under their own small lock (never the avahi poll lock), because
/// AsyncStream calls `onTermination` on whatever thread finishes or cancels the stream.
public final class Broadcast<Element: Sendable>: Sendable {
    private struct Subscribers: ~Copyable {
        var nextID = 0
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        var finished = false
    }

    private let subscribers = Locked(Subscribers())

    /// A broadcast with no subscribers yet.
    public init() {}

    /// A new stream that first yields `initial`, then every later element.
    public func subscribe(replaying initial: [Element] = []) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .unbounded)
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

    /// Ends every stream; later subscribers get an empty stream.
    public func finish() {
        let continuations = subscribers.withLock { state in
            state.finished = true
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}

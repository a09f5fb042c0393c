import Locking
import NIOCore
import NIOSSL

/// The connections that have not yet sent a complete request head (their TLS
/// handshake may not be done either), at most ``maximum``: one more displaces
/// the oldest, so strangers who open connections and stall cannot keep a new
/// client out; they can only make each other's stalls shorter.
final class PendingConnections: Sendable {
    private struct State {
        var next: UInt64 = 0
        var entries: [ObjectIdentifier: (order: UInt64, channel: any Channel)] = [:]
    }
    private let state = Locked(State())
    /// The most pending connections kept at once.
    let maximum: Int

    init(maximum: Int) {
        self.maximum = maximum
    }

    /// Adds `channel`; returns the oldest pending connection it displaces, if the pool was full.
    func add(_ channel: any Channel) -> (any Channel)? {
        state.withLock { state in
            var displaced: (any Channel)?
            if state.entries.count >= maximum, let oldest = state.entries.min(by: { $0.value.order < $1.value.order })?.key {
                displaced = state.entries.removeValue(forKey: oldest)?.channel
            }
            state.entries[ObjectIdentifier(channel)] = (state.next, channel)
            state.next += 1
            return displaced
        }
    }

    /// Removes `channel` (it sent its request head, or it closed); returns whether it was pending.
    @discardableResult
    func remove(_ channel: any Channel) -> Bool {
        state.withLock { $0.entries.removeValue(forKey: ObjectIdentifier(channel)) != nil }
    }

    /// Pending connections now.
    var count: Int { state.withLock { $0.entries.count } }

    /// Closes `channel` at once: a stalled stranger gets no TLS close_notify to wait for.
    static func abort(_ channel: any Channel) {
        channel.eventLoop.execute {
            if let tls = try? channel.pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self) {
                tls.close(promise: nil)  // below the TLS handler: the socket itself
            } else {
                channel.close(promise: nil)
            }
        }
    }
}

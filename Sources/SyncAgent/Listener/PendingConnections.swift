import Locking
import NIOCore
import NIOSSL

/// The connections that have not yet sent a complete request head (their TLS
/// handshake may not be done either), at most ``maximum``: one more displaces
/// the oldest from the most crowded address, so strangers who open connections
/// and stall cannot keep a new client out; they mostly cut their own stalls short.
final class PendingConnections: Sendable {
    private struct State {
        var next: UInt64 = 0
        var entries: [ObjectIdentifier: (order: UInt64, address: String, channel: any Channel)] = [:]
        var byAddress: [String: Int] = [:]

        mutating func remove(_ key: ObjectIdentifier) -> (any Channel)? {
            guard let entry = entries.removeValue(forKey: key) else { return nil }
            let left = byAddress[entry.address, default: 1] - 1
            byAddress[entry.address] = left > 0 ? left : nil
            return entry.channel
        }
    }
    private let state = Locked(State())
    /// The most pending connections kept at once.
    let maximum: Int

    init(maximum: Int) {
        self.maximum = maximum
    }

    /// Adds `channel`; when the pool is full, returns the connection it displaces: the
    /// oldest from the address with the most pending connections, so that a crowd
    /// from a few addresses pushes out its own before anyone else's.
    func add(_ channel: any Channel) -> (any Channel)? {
        let address = channel.remoteAddress?.ipAddress ?? "unknown"
        return state.withLock { state in
            var displaced: (any Channel)?
            if state.entries.count >= maximum, let crowded = state.byAddress.max(by: { $0.value < $1.value })?.key,
               let oldest = state.entries.lazy.filter({ $0.value.address == crowded }).min(by: { $0.value.order < $1.value.order })?.key {
                displaced = state.remove(oldest)
            }
            state.entries[ObjectIdentifier(channel)] = (state.next, address, channel)
            state.byAddress[address, default: 0] += 1
            state.next += 1
            return displaced
        }
    }

    /// Removes `channel` (it sent its request head, or it closed); returns whether it was pending.
    @discardableResult
    func remove(_ channel: any Channel) -> Bool {
        state.withLock { $0.remove(ObjectIdentifier(channel)) != nil }
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

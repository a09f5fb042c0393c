import Locking
import NIOCore
import NIOSSL

/// Connections held by clients that are not trusted yet, at most ``maximum`` in
/// all and ``maximumPerClient`` per address. When one more comes, the oldest
/// *stranger's* connection (one on which no request has proved a user, see
/// ``trust(_:)``) makes room: from the new one's own address when that address
/// is full, else from the address holding the most strangers' connections. So
/// strangers who open connections and stall, or who keep anonymous connections
/// open, cannot keep a new client out: they mostly cut their own short. Only
/// when every connection in the pool is trusted is the new one refused.
///
/// The listener keeps two: connections that have not sent a request head (all
/// strangers, no limit per address), and connections of clients other than
/// paired peers that have.
final class ConnectionPool: Sendable {
    /// Why a connection was refused: every connection in the pool, or from its address, is trusted.
    enum Refusal: Error {
        /// The pool holds its maximum.
        case full
        /// The connection's address holds its maximum.
        case clientFull
    }

    private struct Entry {
        let order: UInt64
        let address: String
        let channel: any Channel
        var trusted = false
    }

    private struct State {
        var next: UInt64 = 0
        var entries: [ObjectIdentifier: Entry] = [:]
        var byAddress: [String: Int] = [:]
        /// Strangers' connections per address (kept as they come and go: a full pool's hot path).
        var strangersByAddress: [String: Int] = [:]

        mutating func remove(_ key: ObjectIdentifier) -> Entry? {
            guard let entry = entries.removeValue(forKey: key) else { return nil }
            Self.decrement(&byAddress, entry.address)
            if !entry.trusted { Self.decrement(&strangersByAddress, entry.address) }
            return entry
        }

        mutating func trust(_ key: ObjectIdentifier) {
            guard let entry = entries[key], !entry.trusted else { return }
            entries[key]?.trusted = true
            Self.decrement(&strangersByAddress, entry.address)
        }

        /// The oldest stranger's connection from `address`, or (`nil`) from the
        /// addresses holding the most strangers' connections.
        func displaceable(from address: String?) -> ObjectIdentifier? {
            let crowded: (String) -> Bool
            if let address {
                crowded = { $0 == address }
            } else {
                guard let most = strangersByAddress.values.max() else { return nil }
                crowded = { strangersByAddress[$0] == most }
            }
            return entries.lazy.filter { !$0.value.trusted && crowded($0.value.address) }
                .min { $0.value.order < $1.value.order }?.key
        }

        private static func decrement(_ counts: inout [String: Int], _ address: String) {
            let left = counts[address, default: 1] - 1
            counts[address] = left > 0 ? left : nil
        }
    }
    private let state = Locked(State())
    /// The most connections held at once.
    let maximum: Int
    /// The most connections held at once from one address.
    let maximumPerClient: Int

    init(maximum: Int, maximumPerClient: Int = .max) {
        precondition(maximum > 0 && maximumPerClient > 0, "a pool holds at least one connection")
        self.maximum = maximum
        self.maximumPerClient = maximumPerClient
    }

    /// Adds `channel` as a stranger's; returns the connection it displaces (to be
    /// aborted), or the refusal when no stranger's connection can make room.
    func add(_ channel: any Channel) -> Result<(any Channel)?, Refusal> {
        let address = channel.remoteAddress?.ipAddress ?? "unknown"
        return state.withLock { state in
            var room: ObjectIdentifier?
            if state.byAddress[address, default: 0] >= maximumPerClient {
                guard let key = state.displaceable(from: address) else { return .failure(.clientFull) }
                room = key
            } else if state.entries.count >= maximum {
                guard let key = state.displaceable(from: nil) else { return .failure(.full) }
                room = key
            }
            let displaced = room.flatMap { state.remove($0)?.channel }
            state.entries[ObjectIdentifier(channel)] = Entry(order: state.next, address: address, channel: channel)
            state.byAddress[address, default: 0] += 1
            state.strangersByAddress[address, default: 0] += 1
            state.next += 1
            return .success(displaced)
        }
    }

    /// Marks `channel` trusted (a request on it proved a user): it is never displaced.
    func trust(_ channel: any Channel) {
        state.withLock { $0.trust(ObjectIdentifier(channel)) }
    }

    /// Removes `channel` (it left this pool, or it closed); returns whether it was in it.
    @discardableResult
    func remove(_ channel: any Channel) -> Bool {
        state.withLock { $0.remove(ObjectIdentifier(channel)) != nil }
    }

    /// Connections held now.
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

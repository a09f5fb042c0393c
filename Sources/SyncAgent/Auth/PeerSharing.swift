import Locking
import Store

/// What this node shares with all its paired peers beyond what each pairing
/// named, and what it offers of each database: the agent's configured
/// databases and their push filters, which the listener applies to every
/// changes feed a peer reads (so a push filter holds whichever side drives
/// the replication). An introduced member gets what its introductions gave it,
/// never the configured databases beside it.
public final class PeerSharing: Sendable {
    private struct State {
        var databases: [String: AgentConfiguration.SharedDatabase] = [:]
        var version = 0
    }
    private let state = Locked(State())

    /// Nothing shared beyond pairings, no filters.
    public init() {}

    /// Shares `databases` (with their push filters) with every paired peer, replacing what was shared.
    public func share(_ databases: [AgentConfiguration.SharedDatabase]) {
        state.withLock {
            $0.databases = Dictionary(databases.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            $0.version += 1
        }
    }

    /// Counts the changes made by ``share(_:)``: what the group's members were computed from.
    var version: Int { state.withLock { $0.version } }

    /// Whether `peer` may replicate `database`: named at pairing (or by its introductions),
    /// or shared with every peer paired directly.
    public func shares(_ database: String, with peer: PairedPeer) -> Bool {
        peer.databases.contains(database) || (!peer.isIntroduced && state.withLock { $0.databases[database] != nil })
    }

    /// The databases `peer` and this node keep in sync.
    public func databases(for peer: PairedPeer) -> [String] {
        if peer.isIntroduced { return peer.databases }
        let configured = state.withLock { Array($0.databases.keys) }
        return Array(Set(peer.databases + configured)).sorted()
    }

    /// Whether `database` is shared through introductions (`introduce = false` in its
    /// `[[database]]` table keeps it to the peers paired directly).
    public func introduces(_ database: String) -> Bool {
        state.withLock { $0.databases[database]?.introduce ?? true }
    }

    /// What this node offers `peer` of `database`; `nil` offers everything.
    public func pushFilter(for peer: PairedPeer, database: String) -> ReplicationFilter? {
        state.withLock { $0.databases[database] }?.pushFilter(for: peer)
    }
}

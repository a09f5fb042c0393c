import Foundation
import Locking

/// The paired peers of a data directory, kept in `peers.json` (mode 0600).
/// The process that owns the directory (see ``Node``) makes every change, so
/// ``changes()`` hears them all, and those of other hands once reread (``Node/followDirectory()``).
public final class PeerStore: Sendable {
    private struct File: Codable, Equatable {
        var peers: [PairedPeer] = []
    }
    private let file: StateFile<File>

    /// The peers of the data directory `directory`.
    public init(directory: String) {
        file = StateFile(path: directory + "/peers.json", empty: File())
    }

    /// Tells of each change made through this store (a pairing added, revoked or seen
    /// at a new address), after it is written: how the agent and the listener follow
    /// pairings without rereading the file.
    public func changes() -> AsyncStream<Void> { file.changes.subscribe() }

    /// The file holding the peers.
    var path: String { file.path }

    /// Rereads the file, which another process may have replaced, telling ``changes()``'
    /// subscribers if the peers are not those last read.
    func reread() { file.reread() }

    /// Every paired peer, in pairing order.
    public func all() throws -> [PairedPeer] {
        try file.load().peers
    }

    /// The paired peer whose certificate has this ID, if any.
    public func peer(id: NodeID) -> PairedPeer? {
        (try? file.load())?.peers.first { $0.id == id }
    }

    /// The peers an ID, an ID's first characters, a UUID or a name designates.
    public func find(_ text: String) throws -> [PairedPeer] {
        try all().filter { Self.matches($0, text) }
    }

    /// Whether `text` names `peer`: its whole ID, a prefix of at least four
    /// characters of it, its UUID or its name.
    public static func matches(_ peer: PairedPeer, _ text: String) -> Bool {
        matches(id: peer.id, uuid: peer.uuid, name: peer.name, text)
    }

    /// Whether `text` names the peer with `id`, `uuid` and `name` (the rule of ``matches(_:_:)``).
    public static func matches(id: NodeID, uuid: String, name: String, _ text: String) -> Bool {
        if let given = NodeID(text) { return id == given }
        let compact = text.uppercased().filter { $0 != "-" }
        return uuid == text.lowercased() || name == text
            || (compact.count >= 4 && id.compact.hasPrefix(compact))
    }

    /// The paired peer that has `uuid` under an ID other than `id`: a node that
    /// claims that UUID with this ID is not that peer.
    public func conflict(uuid: String, id: NodeID) -> PairedPeer? {
        (try? all())?.first { $0.uuid == uuid && $0.id != id }
    }

    /// Records a pairing. Pairing again with the same ID adds the databases it
    /// shares and dates the pairing anew (the agent restarts its replications); a UUID already paired under another ID is refused, since a
    /// certificate names whatever UUID its maker chose: once paired, a UUID
    /// belongs to that ID.
    public func add(_ peer: PairedPeer) throws {
        try file.update { file in
            var peer = peer
            // To the second, as the file keeps it: the agent tells a new pairing by its date.
            peer.pairedAt = Date(timeIntervalSince1970: peer.pairedAt.timeIntervalSince1970.rounded(.down))
            if let taken = file.peers.first(where: { $0.uuid == peer.uuid && $0.id != peer.id }) {
                throw PairingError.invitationRefused("node UUID \(peer.uuid) is already paired with ID \(taken.id.short)")
            }
            if let old = file.peers.first(where: { $0.id == peer.id }) {
                peer.databases = Array(Set(old.databases + peer.databases)).sorted()
            }
            file.peers.removeAll { $0.id == peer.id }
            file.peers.append(peer)
        }
    }

    /// Revokes a pairing; `false` if no such peer.
    @discardableResult
    public func remove(id: NodeID) throws -> Bool {
        try file.update { file in
            let before = file.peers.count
            file.peers.removeAll { $0.id == id }
            return file.peers.count != before
        }
    }

    /// Notes that the peer made a request from `host` now; written at most
    /// once a minute per peer, so a busy replication does not rewrite the file.
    /// A new host is recorded with the port of the peer's last address.
    func seen(_ id: NodeID, fromHost host: String?) {
        guard let peer = peer(id: id) else { return }
        let now = Date()
        let address = host.flatMap { host in peer.lastAddress.map { HostPort.replacingHost(of: $0, with: host) } }
        let moved = address.map { $0 != peer.lastAddress } ?? false
        if !moved, let last = peer.lastSeen, now.timeIntervalSince(last) < ReplicatorTuning.peerSeenInterval { return }
        try? file.update { file in
            guard let index = file.peers.firstIndex(where: { $0.id == id }) else { return }
            file.peers[index].lastSeen = now
            if let address, moved {
                file.peers[index].addresses.removeAll { $0 == address }
                file.peers[index].addresses.insert(address, at: 0)
                file.peers[index].addresses = Array(file.peers[index].addresses.prefix(8))
            }
        }
    }
}

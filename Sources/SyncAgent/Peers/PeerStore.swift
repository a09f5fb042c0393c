import FoundationEssentials
import Locking

/// The group of a data directory, kept in `peers.json` (mode 0600): the peers paired
/// with here directly, what each member last introduced, when introduced members were
/// last seen, and the nodes removed here. Its members (``all()``) are the direct peers
/// and the nodes introductions reach (``GroupMembers``).
/// The process that owns the directory (see ``Node``) makes every change, so
/// ``changes()`` hears them all, and those of other hands once reread (``Node/followDirectory()``).
public final class PeerStore: Sendable {
    private struct File: Codable, Equatable {
        var peers: [PairedPeer] = []
        /// Each member's last introductions, by its ID.
        var introductions: [String: [Introduction]] = [:]
        /// When each introduced member last made a request here, and from where.
        var seen: [String: Seen] = [:]
        /// The nodes removed here, by ID: never taken from an introduction again.
        var removed: [String: Date] = [:]

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            peers = try container.decode([PairedPeer].self, forKey: .peers)
            introductions = try container.decodeIfPresent([String: [Introduction]].self, forKey: .introductions) ?? [:]
            seen = try container.decodeIfPresent([String: Seen].self, forKey: .seen) ?? [:]
            removed = try container.decodeIfPresent([String: Date].self, forKey: .removed) ?? [:]
        }
    }

    /// An introduced member's last request here.
    private struct Seen: Codable, Equatable {
        var lastSeen: Date
        var address: String?
        enum CodingKeys: String, CodingKey {
            case address
            case lastSeen = "last_seen"
        }
    }

    private let file: StateFile<File>
    private let sharing: PeerSharing
    private let ownID: NodeID?
    private let ownUUID: String
    /// The members last computed, and from what.
    private let computed = Locked<(file: File, sharing: Int, members: [PairedPeer])?>(nil)
    /// Requests noted by ``seen(_:fromHost:)`` and not written yet, and when the file last took them.
    private let sightings = Locked<(unwritten: [NodeID: Date], written: Date)>(([:], .distantPast))

    /// The group of the data directory `directory`, for the node `ownID`/`ownUUID`
    /// (never a member of its own group), sharing what `sharing` says.
    public init(directory: String, ownID: NodeID? = nil, ownUUID: String = "", sharing: PeerSharing = PeerSharing()) {
        file = StateFile(path: directory + "/peers.json", empty: File())
        self.ownID = ownID
        self.ownUUID = ownUUID
        self.sharing = sharing
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

    /// Why the file cannot be read now, if it cannot (the peers last read are in use meanwhile);
    /// throws if it cannot be read and never could.
    func fault() throws(StateFileError) -> StateFileError? { try file.fault() }

    /// Every member: the peers paired with here directly, in pairing order, then those introduced.
    public func all() throws -> [PairedPeer] {
        members(of: try file.load())
    }

    /// The peers paired with here directly, in pairing order.
    public func direct() throws -> [PairedPeer] {
        try file.load().peers
    }

    /// The member whose certificate has this ID, if any.
    public func peer(id: NodeID) -> PairedPeer? {
        (try? all())?.first { $0.id == id }
    }

    /// The members `file` makes, computed again only when the file or the sharing changed.
    private func members(of file: File) -> [PairedPeer] {
        let version = sharing.version
        if let last = computed.withLock({ $0 }), last.sharing == version, last.file == file { return last.members }
        var members = GroupMembers(
            direct: file.peers,
            introductions: Dictionary(file.introductions.compactMap { key, list in NodeID(key).map { ($0, list) } },
                                      uniquingKeysWith: { first, _ in first }),
            removed: Set(file.removed.keys.compactMap(NodeID.init)),
            ownID: ownID ?? NodeID(certificateDER: []), ownUUID: ownUUID
        ).members(shares: { Set(self.sharing.databases(for: $0)) }, introduces: sharing.introduces)
        for index in members.indices where members[index].isIntroduced {
            guard let seen = file.seen[members[index].id.description] else { continue }
            members[index].lastSeen = seen.lastSeen
            if let address = seen.address {
                members[index].addresses.removeAll { $0 == address }
                members[index].addresses.insert(address, at: 0)
            }
        }
        computed.withLock { $0 = (file, version, members) }
        return members
    }

    /// What this node introduces to the member `member`: each peer paired with here
    /// directly, but `member` and private pairings, with the databases shared with both
    /// that may be introduced; nothing to a private pairing.
    public func introductions(for member: PairedPeer) -> [Introduction] {
        guard member.introduce, let direct = try? direct() else { return [] }
        let theirs = Set(sharing.databases(for: member)).filter(sharing.introduces)
        return direct.compactMap { peer in
            guard peer.introduce, peer.id != member.id, peer.uuid != member.uuid else { return nil }
            let databases = theirs.intersection(sharing.databases(for: peer))
            return databases.isEmpty ? nil : Introduction(peer, databases: databases.sorted())
        }
    }

    /// Keeps `introductions`, the list the member `introducer` answered, in place of its last;
    /// nothing if `introducer` is no member (its connection outlived it). Lists of nodes no longer
    /// members are dropped.
    public func record(_ introductions: [Introduction], from introducer: NodeID) {
        guard peer(id: introducer) != nil else { return }
        try? file.update { file in
            let key = introducer.description
            guard file.introductions[key] != introductions else { return }
            file.introductions[key] = introductions
            let members = Set(members(of: file).map { $0.id.description })
            file.introductions = file.introductions.filter { members.contains($0.key) }
            file.seen = file.seen.filter { members.contains($0.key) }
        }
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
    /// belongs to that ID. A name another member has is recorded with a suffix (`B-2`),
    /// the name given kept in ``PairedPeer/calledItself``. Returns the peer as recorded.
    @discardableResult
    public func add(_ peer: PairedPeer) throws -> PairedPeer {
        try file.update { file in
            var peer = peer
            let unique = uniqueName(peer.name, for: peer.id, in: file)
            if unique != peer.name { (peer.calledItself, peer.name) = (peer.name, unique) }
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
            // A person paired it: removed before or not, it is a member again.
            file.removed[peer.id.description] = nil
            return peer
        }
    }

    /// `name`, or the first of `name-2`, `name-3`, … that no member of `file` but `id` has.
    private func uniqueName(_ name: String, for id: NodeID, in file: File) -> String {
        let taken = Set(members(of: file).lazy.filter { $0.id != id }.map(\.name))
        guard taken.contains(name) else { return name }
        return (2...).lazy.map { "\(name)-\($0)" }.first { !taken.contains($0) }!
    }

    /// Removes a member: revokes a direct pairing (and with it what the peer introduced), or
    /// drops an introduced member here. Either way the node is never taken from an
    /// introduction again here, unless a person pairs it again. `false` if no such member.
    @discardableResult
    public func remove(id: NodeID) throws -> Bool {
        try file.update { file in
            let wasMember = members(of: file).contains { $0.id == id }
            file.peers.removeAll { $0.id == id }
            file.removed[id.description] = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            file.introductions[id.description] = nil
            file.seen[id.description] = nil
            return wasMember
        }
    }

    /// Notes that the peer made a request from `host` now. A new host is written at
    /// once (the agent follows it), with the port of the peer's last address. The times
    /// alone are written for every peer together, at most once a ``ReplicatorTuning/peerSeenInterval``,
    /// and told to nobody: ten busy peers do not rewrite the file, or wake the agent, ten times a minute.
    func seen(_ id: NodeID, fromHost host: String?) {
        guard let peer = peer(id: id) else { return }
        let now = Date()
        let address = host.flatMap { host in peer.lastAddress.map { HostPort.replacingHost(of: $0, with: host) } }
        if let address, address != peer.lastAddress {
            try? file.update { file in Self.note([id: now], moving: (id, address), in: &file) }
            return
        }
        let due: [NodeID: Date]? = sightings.withLock { sightings in
            sightings.unwritten[id] = now
            guard now.timeIntervalSince(sightings.written) >= ReplicatorTuning.peerSeenInterval else { return nil }
            defer { sightings = ([:], now) }
            return sightings.unwritten
        }
        guard let due else { return }
        try? file.update(announced: false) { file in Self.note(due, moving: nil, in: &file) }
    }

    /// When `peer` last made a request here: its sighting not yet written, if newer than the file's.
    public func lastSeen(_ peer: PairedPeer) -> Date? {
        let unwritten = sightings.withLock { $0.unwritten[peer.id] }
        return [peer.lastSeen, unwritten].compactMap { $0 }.max()
    }

    /// Writes the times peers were seen into `file`, and one peer's new address.
    private static func note(_ sightings: [NodeID: Date], moving: (id: NodeID, address: String)?, in file: inout File) {
        for (id, time) in sightings {
            let address = moving?.id == id ? moving?.address : nil
            guard let index = file.peers.firstIndex(where: { $0.id == id }) else {
                // An introduced member: kept beside the introductions, which say where it was first.
                file.seen[id.description] = Seen(lastSeen: time, address: address ?? file.seen[id.description]?.address)
                continue
            }
            file.peers[index].lastSeen = time
            if let address {
                file.peers[index].addresses.removeAll { $0 == address }
                file.peers[index].addresses.insert(address, at: 0)
                file.peers[index].addresses = Array(file.peers[index].addresses.prefix(8))
            }
        }
    }
}

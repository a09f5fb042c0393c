import FoundationEssentials

/// Who belongs to this node's group, from what it knows: the peers paired with
/// here directly, what each member last introduced, and the nodes removed here.
/// Pure, so the trust rule is tested directly.
///
/// The rule: the group is every node reachable from the direct peers by
/// introductions. A member introduces only the nodes it paired with directly, and
/// only for databases this node shares with that member (so a database never
/// widens along a chain); a private pairing (`--no-introduce`) neither introduces
/// nor is introduced; a node removed here is never taken from an introduction
/// (a person pairing it again lifts that). Whatever a member introduced goes when
/// the member goes, and with it whatever only those introduced nodes introduced:
/// two nodes introducing each other keep nothing alive on their own.
struct GroupMembers {
    /// The peers paired with here directly.
    var direct: [PairedPeer]
    /// Each member's last list, by the member's ID.
    var introductions: [NodeID: [Introduction]]
    /// The nodes removed here (tombstones).
    var removed: Set<NodeID>
    /// This node, never a member of its own group.
    var ownID: NodeID
    var ownUUID: String

    /// The members: the direct peers, then the introduced ones in ID order, each introduced
    /// one with the databases and introducers of every path that reaches it.
    /// `shares` tells the databases this node shares with a member; `introduces`, whether a
    /// database may be shared through introductions at all.
    func members(shares: (PairedPeer) -> Set<String>, introduces: (String) -> Bool) -> [PairedPeer] {
        let directIDs = Set(direct.map(\.id))
        let directUUIDs = Set(direct.map { $0.uuid.lowercased() })
        var introduced: [NodeID: PairedPeer] = [:]
        // Each round takes the introductions of the members found so far; both the members and
        // their databases only grow, so it ends, at the latest when no new path is found.
        for _ in 0...(introductions.count + 1) {
            var next: [NodeID: PairedPeer] = [:]
            let introducers = (direct + introduced.values).filter(\.introduce).sorted { $0.id.fingerprint < $1.id.fingerprint }
            for introducer in introducers {
                guard let list = introductions[introducer.id] else { continue }
                let allowed = shares(introducer).filter(introduces)
                for introduction in list {
                    guard introduction.id != ownID, introduction.uuid != ownUUID.lowercased(), !directIDs.contains(introduction.id),
                          !directUUIDs.contains(introduction.uuid), !removed.contains(introduction.id) else { continue }
                    let databases = Set(introduction.databases).intersection(allowed)
                    guard !databases.isEmpty else { continue }
                    if var known = next[introduction.id] {
                        known.databases = Array(Set(known.databases).union(databases)).sorted()
                        known.introducedBy.append(introducer.id)
                        known.pairedAt = min(known.pairedAt, introduction.pairedAt)
                        for address in introduction.addresses where !known.addresses.contains(address) && known.addresses.count < 8 {
                            known.addresses.append(address)
                        }
                        next[introduction.id] = known
                    } else if !next.values.contains(where: { $0.uuid == introduction.uuid }) {
                        next[introduction.id] = PairedPeer(uuid: introduction.uuid, id: introduction.id, name: introduction.name,
                                                           addresses: introduction.addresses, databases: databases.sorted(),
                                                           pairedAt: introduction.pairedAt, introducedBy: [introducer.id])
                    }
                }
            }
            if next == introduced { break }
            introduced = next
        }
        return direct + introduced.values.sorted { $0.id.fingerprint < $1.id.fingerprint }
    }
}

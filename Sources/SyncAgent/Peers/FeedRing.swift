/// Which members' feeds this node reads whole, and which only first-hand, for each database.
///
/// Every member pulls from every member it shares a database with. Reading every
/// member's whole feed, each revision would be listed to each member by all the
/// others: in a group of ten, nine rows per document, eight of them already held.
/// So most pulls read first-hand changes only (``ReplicationConfiguration/firstHandOnly``):
/// what entered the group at that member. A change one member relays to another
/// is then listed once more, by a ring: each member reads the whole feeds of the next
/// ``fullFeeds`` members present after it, in member-ID order. The ring carries what
/// first-hand feeds miss: a revision whose member left before all had it, or a
/// conflict whose first-hand row a relayed change superseded. Skipping two, it stays
/// connected without any one member, and a member that is away is left out of it
/// until it is back (`present`).
///
/// Each member decides from what it knows. Where two see different members, the ring
/// may miss a relayed change: ``PeerPulls`` sweeps each first-hand member's whole
/// feed every ten minutes, so such a change waits ten minutes at most. Pure, so the rule is
/// tested directly.
struct FeedRing {
    /// How many members' whole feeds each member reads, per database.
    static let fullFeeds = 2

    /// One member sharing databases with this node.
    struct Member {
        var id: NodeID
        /// The databases it is in the ring for: shared with it, and introduced. The others'
        /// feeds are read whole (a private peer may be known to this node alone).
        var databases: Set<String>
        /// Not known to be away: reached, or not yet failed to be.
        var present: Bool
    }

    /// This node.
    var ownID: NodeID

    /// The databases whose feed is read first-hand only, for each member (by ID);
    /// every other shared database's feed is read whole.
    func firstHand(_ members: [Member]) -> [NodeID: Set<String>] {
        var result: [NodeID: Set<String>] = [:]
        for member in members { result[member.id] = [] }
        let databases = Set(members.flatMap(\.databases))
        for database in databases {
            let sharing = members.filter { $0.databases.contains(database) }
            let whole = Set(Self.successors(of: ownID, among: sharing.filter(\.present).map(\.id), count: Self.fullFeeds))
            for member in sharing where !whole.contains(member.id) {
                result[member.id, default: []].insert(database)
            }
        }
        return result
    }

    /// The `count` IDs after `own` in fingerprint order among `others`, wrapping around.
    static func successors(of own: NodeID, among others: [NodeID], count: Int) -> [NodeID] {
        let sorted = others.filter { $0 != own }.sorted { $0.fingerprint < $1.fingerprint }
        let start = sorted.firstIndex { $0.fingerprint > own.fingerprint } ?? 0
        return (0..<min(count, sorted.count)).map { sorted[(start + $0) % sorted.count] }
    }
}

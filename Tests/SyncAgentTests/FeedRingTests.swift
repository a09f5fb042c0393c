@testable import SyncAgent
import Testing

/// Which members' feeds a member reads whole (``FeedRing``): two per database, the
/// next present ones in ID order, so the whole feeds alone carry every change to
/// every member, with any one member away.
@Suite struct FeedRingTests {
    /// Node IDs in fingerprint order.
    let ids = (0..<10).map { NodeID(certificateDER: [UInt8($0)]) }.sorted { $0.fingerprint < $1.fingerprint }

    /// The whole feeds `own` reads of `database`, as it sees `others`.
    func whole(_ own: NodeID, _ others: [NodeID], database: String = "db", away: Set<NodeID> = []) -> Set<NodeID> {
        let members = others.filter { $0 != own }.map { FeedRing.Member(id: $0, databases: [database], present: !away.contains($0)) }
        let firstHand = FeedRing(ownID: own).firstHand(members)
        #expect(Set(firstHand.keys) == Set(members.map(\.id)), "every member has an entry")
        return Set(members.map(\.id).filter { !(firstHand[$0] ?? []).contains(database) })
    }

    /// Whether every member's changes reach every other through whole feeds alone.
    func carriesEverything(_ members: [NodeID], away: Set<NodeID> = []) -> Bool {
        let present = members.filter { !away.contains($0) }
        let reads = Dictionary(uniqueKeysWithValues: present.map { ($0, whole($0, members, away: away)) })
        for source in present {
            var reached: Set<NodeID> = [source]
            var changed = true
            while changed {
                changed = false
                for (reader, feeds) in reads where !reached.contains(reader) && !feeds.isDisjoint(with: reached) {
                    reached.insert(reader)
                    changed = true
                }
            }
            if reached != Set(present) { return false }
        }
        return true
    }

    @Test func eachOfTenReadsTheWholeFeedsOfTheNextTwoAndTheRestFirstHand() {
        for (index, id) in ids.enumerated() {
            #expect(whole(id, ids) == [ids[(index + 1) % 10], ids[(index + 2) % 10]])
        }
        #expect(carriesEverything(ids))
    }

    @Test func theWholeFeedsStillCarryEverythingWithAnyOneOrTwoMembersAway() {
        for gone in ids { #expect(carriesEverything(ids, away: [gone])) }
        for (first, second) in zip(ids, ids.dropFirst()) { #expect(carriesEverything(ids, away: [first, second])) }
    }

    @Test func anAwayMemberIsSkippedAndItsFeedReadFirstHand() {
        // ids[1] is away: ids[0] reads ids[2] and ids[3] whole instead.
        #expect(whole(ids[0], ids, away: [ids[1]]) == [ids[2], ids[3]])
        #expect(whole(ids[9], ids, away: [ids[1]]) == [ids[0], ids[2]])
    }

    @Test func aGroupOfThreeReadsEveryFeedWhole() {
        let three = Array(ids.prefix(3))
        for id in three { #expect(whole(id, three) == Set(three).subtracting([id])) }
        #expect(whole(ids[0], Array(ids.prefix(2))) == [ids[1]])
    }

    @Test func eachDatabaseHasItsOwnRing() {
        // ids[1] and ids[2] share only "other" with ids[0]: its ring for "db" skips them.
        let members = ids.dropFirst().map { id in
            FeedRing.Member(id: id, databases: id == ids[1] || id == ids[2] ? ["other"] : ["db", "other"], present: true)
        }
        let firstHand = FeedRing(ownID: ids[0]).firstHand(members)
        #expect(firstHand[ids[1]] == [])
        #expect(firstHand[ids[2]] == [])
        #expect(firstHand[ids[3]] == ["other"])
        #expect(firstHand[ids[4]] == ["other"])
        #expect(firstHand[ids[5]] == ["db", "other"])
    }
}

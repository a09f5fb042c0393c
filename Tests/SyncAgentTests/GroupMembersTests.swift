import Foundation
@testable import SyncAgent
import Testing

/// The group's trust rule (``GroupMembers``): who becomes a member through
/// introductions, with which databases, and who never does.
@Suite struct GroupMembersTests {
    /// A node named `name`: its ID and UUID derived from the name.
    struct Node {
        let name: String
        var id: NodeID { NodeID(certificateDER: Array(name.utf8)) }
        var uuid: String { String(id.fingerprint.prefix(32)) }

        func paired(_ databases: [String], introduce: Bool = true) -> PairedPeer {
            PairedPeer(uuid: uuid, id: id, name: name, addresses: ["\(name):6984"], databases: databases,
                       pairedAt: Date(timeIntervalSince1970: 1_000), introduce: introduce)
        }

        func introduced(_ databases: [String]) -> Introduction {
            Introduction(paired(databases), databases: databases)
        }
    }

    let me = Node(name: "me"), a = Node(name: "a"), b = Node(name: "b"), c = Node(name: "c"), d = Node(name: "d")

    func members(direct: [PairedPeer], _ introductions: [NodeID: [Introduction]], removed: Set<NodeID> = [],
                 notIntroduced: Set<String> = []) -> [String: PairedPeer] {
        let group = GroupMembers(direct: direct, introductions: introductions, removed: removed, ownID: me.id, ownUUID: me.uuid)
        let list = group.members(shares: { Set($0.databases) }, introduces: { !notIntroduced.contains($0) })
        return Dictionary(uniqueKeysWithValues: list.map { ($0.name, $0) })
    }

    /// me–a paired; a paired b; b paired c; c paired d: a chain, which introductions make a full group.
    @Test func aChainOfPairingsReachesEveryNode() {
        let group = members(direct: [a.paired(["notes"])], [
            a.id: [b.introduced(["notes"])],
            b.id: [a.introduced(["notes"]), c.introduced(["notes"])],
            c.id: [b.introduced(["notes"]), d.introduced(["notes"])],
        ])
        #expect(Set(group.keys) == ["a", "b", "c", "d"])
        #expect(group["a"]?.introducedBy == [])
        // b is introduced by a, and by c, which paired with it too.
        #expect(Set(group["b"]?.introducedBy ?? []) == [a.id, c.id])
        #expect(group["c"]?.introducedBy == [b.id])
        #expect(group["d"]?.introducedBy == [c.id])
        #expect(group["d"]?.databases == ["notes"])
        #expect(group["d"]?.addresses == ["d:6984"])
    }

    /// A member introduces only for the databases shared with it: a database never widens along a chain.
    @Test func databasesNeverWidenAlongAChain() {
        let group = members(direct: [a.paired(["notes"])], [
            a.id: [b.introduced(["notes", "photos"])],
            b.id: [c.introduced(["photos"])],
        ])
        #expect(group["b"]?.databases == ["notes"])
        #expect(group["c"] == nil, "b shares only notes with this node, so it cannot introduce c for photos")
    }

    /// Nodes that only introduce each other are members only while a member paired here reaches them.
    @Test func whatAMemberIntroducedGoesWithItEvenInACycle() {
        let before = members(direct: [a.paired(["notes"])], [
            a.id: [b.introduced(["notes"])],
            b.id: [c.introduced(["notes"])],
            c.id: [b.introduced(["notes"])],
        ])
        #expect(Set(before.keys) == ["a", "b", "c"])
        // a removed b: its list no longer names it; b and c still introduce each other.
        let after = members(direct: [a.paired(["notes"])], [
            a.id: [],
            b.id: [c.introduced(["notes"])],
            c.id: [b.introduced(["notes"])],
        ])
        #expect(Set(after.keys) == ["a"])
    }

    /// A node removed here is never taken from an introduction, whoever introduces it.
    @Test func aRemovedNodeIsNotTakenBackFromAnyIntroduction() {
        let group = members(direct: [a.paired(["notes"]), d.paired(["notes"])], [
            a.id: [b.introduced(["notes"])],
            d.id: [b.introduced(["notes"]), c.introduced(["notes"])],
        ], removed: [b.id])
        #expect(Set(group.keys) == ["a", "d", "c"])
    }

    /// The introductions of a removed member count no more, nor do those of a node never introduced.
    @Test func introductionsFromNonMembersCountForNothing() {
        let group = members(direct: [a.paired(["notes"])], [
            b.id: [c.introduced(["notes"])],  // b is no member: what it says is ignored
            a.id: [],
        ])
        #expect(Set(group.keys) == ["a"])
    }

    /// A private pair neither introduces nor is introduced; nor is a database kept out of introductions.
    @Test func privatePairsAndDatabasesStayOut() {
        let group = members(direct: [a.paired(["notes"], introduce: false), d.paired(["notes", "diary"])], [
            a.id: [b.introduced(["notes"])],
            d.id: [c.introduced(["notes", "diary"])],
        ], notIntroduced: ["diary"])
        #expect(Set(group.keys) == ["a", "d", "c"])
        #expect(group["c"]?.databases == ["notes"])
    }

    /// Two introducers: both are named, the databases of both paths kept.
    @Test func aNodeIntroducedTwiceKeepsBothIntroducersAndDatabases() {
        let group = members(direct: [a.paired(["notes"]), d.paired(["photos"])], [
            a.id: [c.introduced(["notes"])],
            d.id: [c.introduced(["photos"])],
        ])
        #expect(Set(group["c"]?.introducedBy ?? []) == [a.id, d.id])
        #expect(group["c"]?.databases == ["notes", "photos"])
    }

    /// No member is this node, nor a node claiming a direct peer's UUID under another ID.
    @Test func neitherThisNodeNorAUUIDClaimedTwice() {
        var impostor = c.introduced(["notes"])
        impostor.uuid = a.uuid
        var selfClaim = d.introduced(["notes"])
        selfClaim.uuid = me.uuid
        let group = members(direct: [a.paired(["notes"])], [a.id: [impostor, selfClaim, me.introduced(["notes"])]])
        #expect(Set(group.keys) == ["a"])
    }

    /// An answer is input: invalid entries make the whole answer invalid.
    @Test func anAnswerWithAnInvalidIntroductionIsRefused() throws {
        let good = Introduction.answer([b.introduced(["notes"])])
        #expect(Introduction.parse(answer: good.json)?.introductions == [b.introduced(["notes"])])
        var bad = try #require(good.json.objectValue)
        bad["introductions"] = [["uuid": "not-a-uuid", "id": .string(b.id.description), "name": "b", "addresses": [],
                                 "databases": ["notes"], "paired_at": 1000]]
        #expect(Introduction.parse(answer: .object(bad)) == nil)
        bad["introductions"] = [["uuid": .string(b.uuid), "id": .string(b.id.description), "name": "b", "addresses": [],
                                 "databases": ["../etc"], "paired_at": 1000]]
        #expect(Introduction.parse(answer: .object(bad)) == nil)
    }
}

import XCTest
@testable import Store

/// The tree's queries: lookup, leaves, the winner, conflicts, history, compaction.
final class RevisionTreeTests: XCTestCase {
    private func rev(_ text: String) -> RevisionID { RevisionTreeFixture.revision(text) }

    /// A tree made by `addRevision` calls in the order given: (revision, parent, deleted).
    private func makeTree(_ revisions: [(String, String?, Bool)]) -> RevisionTree {
        var tree = RevisionTree()
        for (revision, parent, deleted) in revisions {
            tree.addRevision(rev(revision), parent: parent.map(rev), deleted: deleted,
                             body: RevisionTreeFixture.body(#"{"rev":"\#(revision)"}"#), attachments: [])
        }
        RevisionTreeFixture.assertValid(tree)
        return tree
    }

    func testEmptyTreeHasNoWinnerLeavesOrHistory() {
        let tree = RevisionTree()
        XCTAssertTrue(tree.isEmpty)
        XCTAssertNil(tree.winner)
        XCTAssertEqual(tree.leaves, [])
        XCTAssertEqual(tree.conflicts, [])
        XCTAssertEqual(tree.deletedConflicts, [])
        XCTAssertEqual(tree.history(of: rev("1-a")), [])
        XCTAssertFalse(tree.contains(rev("1-a")))
        XCTAssertNil(tree.index(of: rev("1-a")))
    }

    func testLinearHistoryLookupAndLeaves() {
        let tree = makeTree([("1-a", nil, false), ("2-b", "1-a", false), ("3-c", "2-b", false)])
        XCTAssertFalse(tree.isEmpty)
        XCTAssertEqual(tree.nodes.map(\.revision), [rev("1-a"), rev("2-b"), rev("3-c")])
        XCTAssertEqual(tree.winner?.revision, rev("3-c"))
        XCTAssertEqual(tree.winner?.body, RevisionTreeFixture.body(#"{"rev":"3-c"}"#))
        XCTAssertEqual(tree.leaves.map(\.revision), [rev("3-c")])
        XCTAssertEqual(tree.history(of: rev("3-c")), [rev("3-c"), rev("2-b"), rev("1-a")])
        XCTAssertEqual(tree.history(of: rev("2-b")), [rev("2-b"), rev("1-a")])
        XCTAssertTrue(tree.contains(rev("2-b")))
        XCTAssertFalse(tree.contains(rev("2-c")))
        XCTAssertEqual(tree.node(rev("2-b"))?.parent, tree.index(of: rev("1-a")))
        XCTAssertNil(tree.node(rev("1-a"))?.parent)
        XCTAssertEqual((0..<3).map(tree.isLeaf), [false, false, true])
    }

    func testAddingAnExistingRevisionChangesNothing() {
        var tree = makeTree([("1-a", nil, false), ("2-b", "1-a", false)])
        let before = tree
        tree.addRevision(rev("2-b"), parent: rev("1-a"), deleted: true, body: nil, attachments: [])
        XCTAssertEqual(tree, before)
    }

    func testLongerBranchWinsOverHigherDigest() {
        let tree = makeTree([("1-a", nil, false), ("2-z", "1-a", false), ("2-b", "1-a", false), ("3-c", "2-b", false)])
        XCTAssertEqual(tree.winner?.revision, rev("3-c"))
        XCTAssertEqual(tree.conflicts, [rev("2-z")])
    }

    func testGenerationComparesAsANumber() {
        var chain: [(String, String?, Bool)] = [("1-x", nil, false)]
        for generation in 2...10 { chain.append(("\(generation)-x", "\(generation - 1)-x", false)) }
        chain.append(("9-z", "8-x", false))
        let tree = makeTree(chain)
        // "9-z" > "10-x" as text; as revisions the tenth generation wins.
        XCTAssertEqual(tree.winner?.revision, rev("10-x"))
        XCTAssertEqual(tree.conflicts, [rev("9-z")])
    }

    func testEqualGenerationsTieBreakOnDigestInASCIIOrder() {
        // ASCII: "9" < "B" < "a"; neither numeric nor case-insensitive order.
        let tree = makeTree([("1-r", nil, false), ("2-B", "1-r", false), ("2-a", "1-r", false), ("2-9", "1-r", false)])
        XCTAssertEqual(tree.winner?.revision, rev("2-a"))
        XCTAssertEqual(tree.leaves.map(\.revision), [rev("2-a"), rev("2-B"), rev("2-9")])
        XCTAssertEqual(tree.conflicts, [rev("2-B"), rev("2-9")])

        let hex = makeTree([("1-r", nil, false),
                            ("2-7c9a5d0e2b2f4c2a8b0a6f1c3d4e5f60", "1-r", false),
                            ("2-7c9a5d0e2b2f4c2a8b0a6f1c3d4e5f6f", "1-r", false)])
        XCTAssertEqual(hex.winner?.revision, rev("2-7c9a5d0e2b2f4c2a8b0a6f1c3d4e5f6f"))
    }

    func testLiveLeafBeatsLongerTombstone() {
        let tree = makeTree([("1-a", nil, false), ("2-b", "1-a", false), ("3-c", "2-b", true), ("2-d", "1-a", false)])
        XCTAssertEqual(tree.winner?.revision, rev("2-d"))
        XCTAssertEqual(tree.winner?.deleted, false)
        XCTAssertEqual(tree.conflicts, [])
        XCTAssertEqual(tree.deletedConflicts, [rev("3-c")])
        XCTAssertEqual(tree.leaves.map(\.revision), [rev("2-d"), rev("3-c")])
    }

    func testWhenEveryLeafIsDeletedTheBestTombstoneWins() {
        let tree = makeTree([("1-a", nil, false), ("2-b", "1-a", false), ("3-c", "2-b", true),
                             ("2-d", "1-a", true), ("3-a", "2-b", true)])
        XCTAssertEqual(tree.winner?.revision, rev("3-c"))
        XCTAssertEqual(tree.winner?.deleted, true)
        XCTAssertEqual(tree.conflicts, [])
        XCTAssertEqual(tree.deletedConflicts, [rev("3-a"), rev("2-d")])
    }

    func testConflictsAndDeletedConflictsAreBestFirstAndExcludeTheWinner() {
        let tree = makeTree([("1-a", nil, false), ("2-b", "1-a", false), ("3-x", "2-b", false), ("3-a", "2-b", false),
                             ("2-z", "1-a", false), ("3-q", "2-z", false), ("4-q", "3-q", true), ("2-c", "1-a", true)])
        XCTAssertEqual(tree.winner?.revision, rev("3-x"))
        XCTAssertEqual(tree.leaves.map(\.revision), [rev("3-x"), rev("3-a"), rev("4-q"), rev("2-c")])
        XCTAssertEqual(tree.conflicts, [rev("3-a")])
        XCTAssertEqual(tree.deletedConflicts, [rev("4-q"), rev("2-c")])
    }

    func testWinnerMatchesAnIndependentRankingOnRandomTrees() {
        var random = RevisionTreeFixture.Random(seed: 7)
        for _ in 0..<200 {
            let tree = RevisionTreeFixture.randomTree(size: Int.random(in: 1...40, using: &random), using: &random)
            let parents = Set(tree.nodes.compactMap(\.parent))
            let leaves = tree.nodes.indices.filter { !parents.contains($0) }.map { tree.nodes[$0] }
            // Rank as a (live, generation, digest bytes) triple, highest first.
            let expected = leaves.sorted { lhs, rhs in
                if lhs.deleted != rhs.deleted { return !lhs.deleted }
                if lhs.revision.generation != rhs.revision.generation { return lhs.revision.generation > rhs.revision.generation }
                return Array(rhs.revision.digest.utf8).lexicographicallyPrecedes(Array(lhs.revision.digest.utf8))
            }
            XCTAssertEqual(tree.leaves.map(\.revision), expected.map(\.revision))
            XCTAssertEqual(tree.winner?.revision, expected.first?.revision)
            XCTAssertEqual(tree.conflicts, expected.dropFirst().filter { !$0.deleted }.map(\.revision))
            XCTAssertEqual(tree.deletedConflicts, expected.dropFirst().filter(\.deleted).map(\.revision))
            XCTAssertEqual(tree.nodes.indices.filter(tree.isLeaf).count, leaves.count)
        }
    }

    func testCompactDropsBodiesAndAttachmentsOfNonLeavesOnly() {
        var tree = RevisionTree()
        let attachment = Attachment(name: "a.txt", contentType: "text/plain", length: 3, digest: "md5-x", revpos: 1, key: "ff")
        tree.addRevision(rev("1-a"), parent: nil, deleted: false, body: RevisionTreeFixture.body("{}"), attachments: [attachment])
        tree.addRevision(rev("2-b"), parent: rev("1-a"), deleted: false, body: RevisionTreeFixture.body("{}"), attachments: [attachment])
        tree.addRevision(rev("2-c"), parent: rev("1-a"), deleted: true, body: RevisionTreeFixture.body("{}"), attachments: [attachment])
        tree.addRevision(rev("3-d"), parent: rev("2-b"), deleted: false, body: RevisionTreeFixture.body(#"{"x":1}"#), attachments: [attachment])
        tree.compact()
        XCTAssertNil(tree.node(rev("1-a"))?.body)
        XCTAssertEqual(tree.node(rev("1-a"))?.attachments, [])
        XCTAssertNil(tree.node(rev("2-b"))?.body)
        XCTAssertEqual(tree.node(rev("2-c"))?.body, RevisionTreeFixture.body("{}"))
        XCTAssertEqual(tree.node(rev("3-d"))?.body, RevisionTreeFixture.body(#"{"x":1}"#))
        XCTAssertEqual(tree.node(rev("3-d"))?.attachments, [attachment])
        XCTAssertEqual(tree.winner?.revision, rev("3-d"))
        XCTAssertEqual(tree.nodes.count, 4)
    }

    func testMissingReportsUnknownRevisionsOnceInOrder() {
        let tree = makeTree([("1-a", nil, false), ("2-b", "1-a", false)])
        let result = tree.missing([rev("3-c"), rev("1-a"), rev("2-x"), rev("3-c"), rev("2-b")])
        XCTAssertEqual(result.missing, [rev("3-c"), rev("2-x")])
        XCTAssertEqual(result.possibleAncestors, [rev("2-b")])
        // A long question (its repeats are found by hashing) answers the same way.
        let long = (3...12).map { rev("\($0)-c") }
        XCTAssertEqual(tree.missing(long + [rev("1-a")] + long.reversed()).missing, long)
    }

    func testNothingMissingHasNoPossibleAncestors() {
        let tree = makeTree([("1-a", nil, false), ("2-b", "1-a", false)])
        let result = tree.missing([rev("1-a"), rev("2-b")])
        XCTAssertEqual(result.missing, [])
        XCTAssertEqual(result.possibleAncestors, [])
        XCTAssertEqual(RevisionTree().missing([rev("1-a")]).missing, [rev("1-a")])
        XCTAssertEqual(RevisionTree().missing([rev("1-a")]).possibleAncestors, [])
    }

    func testPossibleAncestorsAreLeavesBelowTheHighestMissingGeneration() {
        // Leaves: 4-d (live), 3-x (deleted), 2-z (live); interior nodes are never offered.
        let tree = makeTree([("1-a", nil, false), ("2-b", "1-a", false), ("3-c", "2-b", false), ("4-d", "3-c", false),
                             ("3-x", "2-b", true), ("2-z", "1-a", false)])
        XCTAssertEqual(tree.missing([rev("5-e")]).possibleAncestors, [rev("4-d"), rev("2-z"), rev("3-x")])
        XCTAssertEqual(tree.missing([rev("4-e")]).possibleAncestors, [rev("2-z"), rev("3-x")])
        // The highest missing generation decides, even when a lower one is also missing.
        XCTAssertEqual(tree.missing([rev("2-q"), rev("4-e")]).possibleAncestors, [rev("2-z"), rev("3-x")])
        XCTAssertEqual(tree.missing([rev("3-e")]).possibleAncestors, [rev("2-z")])
        XCTAssertEqual(tree.missing([rev("2-e")]).possibleAncestors, [])
        // A known revision of a high generation does not count.
        XCTAssertEqual(tree.missing([rev("4-d"), rev("2-e")]).possibleAncestors, [])
    }
}
/// Shared helpers for the revision tree tests: revision ids from text, a
/// seeded random generator, random trees, and an invariant check.
enum RevisionTreeFixture {
    /// A revision id from `N-digest`, failing the test run loudly when malformed.
    static func revision(_ text: String) -> RevisionID {
        guard let revision = RevisionID(text) else { fatalError("bad revision id in test: \(text)") }
        return revision
    }

    /// The body bytes of a JSON text.
    static func body(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The `(revision, parent revision, deleted)` triples that say what a tree is,
    /// independent of how it is stored.
    static func shape(_ tree: RevisionTree) -> Set<Edge> {
        Set(tree.nodes.map { node in
            Edge(revision: node.revision, parent: node.parent.map { tree.nodes[$0].revision }, deleted: node.deleted)
        })
    }

    /// One node of a tree's shape.
    struct Edge: Hashable, CustomStringConvertible {
        var revision: RevisionID
        var parent: RevisionID?
        var deleted: Bool
        var description: String { "\(revision)<-\(parent.map(String.init(describing:)) ?? "root")\(deleted ? " deleted" : "")" }
    }

    /// Fails the test unless `tree`'s nodes are sorted and unique, every parent
    /// precedes its child and is one generation older.
    static func assertValid(_ tree: RevisionTree, file: StaticString = #filePath, line: UInt = #line) {
        for (index, node) in tree.nodes.enumerated() {
            if index > 0 {
                XCTAssertLessThan(tree.nodes[index - 1].revision, node.revision, "nodes not sorted at \(index)", file: file, line: line)
            }
            if let parent = node.parent {
                XCTAssertLessThan(parent, index, "parent after child at \(index)", file: file, line: line)
                XCTAssertGreaterThanOrEqual(parent, 0, file: file, line: line)
                if parent < index, parent >= 0 {
                    XCTAssertEqual(tree.nodes[parent].revision.generation + 1, node.revision.generation,
                                   "parent generation at \(index)", file: file, line: line)
                }
            }
            XCTAssertEqual(tree.index(of: node.revision), index, file: file, line: line)
        }
    }

    /// A random digest: usually CouchDB's 32 hex digits, sometimes other text.
    static func randomDigest(using random: inout Random) -> String {
        if random.next() % 4 == 0 {
            let alphabet = Array("abcXYZ019-_~!".utf8)
            let length = Int.random(in: 1...12, using: &random)
            return String(decoding: (0..<length).map { _ in alphabet.randomElement(using: &random)! }, as: UTF8.self)
        }
        return (0..<32).map { _ in String(Int.random(in: 0..<16, using: &random), radix: 16) }.joined()
    }

    /// A random attachment list (often empty).
    static func randomAttachments(using random: inout Random) -> [Attachment] {
        (0..<Int.random(in: 0...2, using: &random)).map { index in
            Attachment(name: "file \(index) é.txt", contentType: "text/plain",
                       length: Int.random(in: -2...1_000_000, using: &random),
                       digest: "md5-\(Int.random(in: 0...Int.max, using: &random))",
                       revpos: Int.random(in: Int.min...Int.max, using: &random),
                       key: String(repeating: "ab", count: Int.random(in: 0...32, using: &random)))
        }
    }

    /// A random body, sometimes absent.
    static func randomBody(using random: inout Random) -> [UInt8]? {
        if random.next() % 5 == 0 { return nil }
        return (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    /// A random tree of up to `size` revisions: branches off any node, tombstones,
    /// missing bodies, disjoint roots of generation above 1.
    static func randomTree(size: Int, using random: inout Random) -> RevisionTree {
        var tree = RevisionTree()
        for _ in 0..<size {
            let root = tree.isEmpty || random.next() % 10 == 0
            let revisionParent: RevisionID? = root ? nil : tree.nodes.randomElement(using: &random)!.revision
            let generation = revisionParent.map { $0.generation + 1 } ?? Int.random(in: 1...5, using: &random)
            let revision = RevisionID(generation: generation, digest: randomDigest(using: &random))
            tree.addRevision(revision, parent: revisionParent, deleted: random.next() % 4 == 0,
                             body: randomBody(using: &random), attachments: randomAttachments(using: &random))
        }
        return tree
    }
}

extension RevisionTreeFixture {
    /// SplitMix64: a small, fast, seedable generator so random tests repeat exactly.
    struct Random: RandomNumberGenerator {
        private var state: UInt64

        init(seed: UInt64) { state = seed }

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}

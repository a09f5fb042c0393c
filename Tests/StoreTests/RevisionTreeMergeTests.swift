import XCTest
@testable import Store

/// Merging peers' histories (`new_edits=false`), and the convergence property.
final class RevisionTreeMergeTests: XCTestCase {
    private func rev(_ text: String) -> RevisionID { RevisionTreeFixture.revision(text) }
    private func revs(_ texts: String...) -> [RevisionID] { texts.map(rev) }
    private let body = RevisionTreeFixture.body(#"{"peer":true}"#)

    func testMergeIntoAnEmptyTreeBuildsTheChain() {
        var tree = RevisionTree()
        XCTAssertEqual(tree.merge(history: revs("3-c", "2-b", "1-a"), deleted: false, body: body, attachments: []), .added)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("1-a", "2-b", "3-c"))
        XCTAssertEqual(tree.history(of: rev("3-c")), revs("3-c", "2-b", "1-a"))
        XCTAssertEqual(tree.node(rev("3-c"))?.body, body)
        XCTAssertNil(tree.node(rev("2-b"))?.body)
        XCTAssertNil(tree.node(rev("1-a"))?.body)
        XCTAssertEqual(tree.winner?.revision, rev("3-c"))
    }

    func testMergeOfAnOverlappingHistoryExtendsTheBranch() {
        var tree = RevisionTree()
        tree.addRevision(rev("1-a"), parent: nil, deleted: false, body: RevisionTreeFixture.body("{}"), attachments: [])
        tree.addRevision(rev("2-b"), parent: rev("1-a"), deleted: false, body: RevisionTreeFixture.body(#"{"mine":1}"#), attachments: [])
        XCTAssertEqual(tree.merge(history: revs("4-d", "3-c", "2-b", "1-a"), deleted: false, body: body, attachments: []), .added)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.count, 4)
        XCTAssertEqual(tree.history(of: rev("4-d")), revs("4-d", "3-c", "2-b", "1-a"))
        XCTAssertEqual(tree.node(rev("2-b"))?.body, RevisionTreeFixture.body(#"{"mine":1}"#), "a known body is kept")
        XCTAssertEqual(tree.winner?.revision, rev("4-d"))
        XCTAssertEqual(tree.conflicts, [])
    }

    func testMergeOfADivergingHistoryMakesAConflict() {
        var tree = RevisionTree()
        tree.merge(history: revs("2-b", "1-a"), deleted: false, body: body, attachments: [])
        XCTAssertEqual(tree.merge(history: revs("2-c", "1-a"), deleted: false, body: body, attachments: []), .added)
        XCTAssertEqual(tree.merge(history: revs("3-e", "2-d", "1-a"), deleted: true, body: body, attachments: []), .added)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.count, 5)
        XCTAssertEqual(tree.winner?.revision, rev("2-c"))
        XCTAssertEqual(tree.conflicts, revs("2-b"))
        XCTAssertEqual(tree.deletedConflicts, revs("3-e"))
    }

    func testMergeOfADisjointHistoryBecomesASeparateRoot() {
        var tree = RevisionTree()
        tree.merge(history: revs("2-b", "1-a"), deleted: false, body: body, attachments: [])
        XCTAssertEqual(tree.merge(history: revs("5-e", "4-d"), deleted: false, body: body, attachments: []), .added)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.count, 4)
        XCTAssertNil(tree.node(rev("4-d"))?.parent, "a root of generation 4: its ancestors are unknown")
        XCTAssertEqual(tree.history(of: rev("5-e")), revs("5-e", "4-d"))
        XCTAssertEqual(tree.winner?.revision, rev("5-e"))
        XCTAssertEqual(tree.conflicts, revs("2-b"))
    }

    func testMergeOfAnAlreadyPresentRevisionChangesNothing() {
        var tree = RevisionTree()
        tree.merge(history: revs("3-c", "2-b", "1-a"), deleted: false, body: body, attachments: [])
        let before = tree
        let other = RevisionTreeFixture.body(#"{"other":1}"#)
        XCTAssertEqual(tree.merge(history: revs("3-c", "2-b", "1-a"), deleted: false, body: other, attachments: []), .alreadyPresent)
        XCTAssertEqual(tree.merge(history: revs("3-c", "2-b"), deleted: true, body: other, attachments: []), .alreadyPresent)
        XCTAssertEqual(tree.merge(history: revs("3-c"), deleted: false, body: nil, attachments: []), .alreadyPresent)
        XCTAssertEqual(tree.merge(history: revs("1-a"), deleted: false, body: nil, attachments: []), .alreadyPresent)
        XCTAssertEqual(tree.merge(history: [], deleted: false, body: nil, attachments: []), .alreadyPresent)
        XCTAssertEqual(tree, before)
    }

    func testMergeFillsTheBodyOfARevisionKnownOnlyFromHistory() {
        var tree = RevisionTree()
        tree.merge(history: revs("3-c", "2-b", "1-a"), deleted: false, body: body, attachments: [])
        let attachment = Attachment(name: "photo.jpg", contentType: "image/jpeg", length: 10, digest: "md5-abc", revpos: 2, key: "00ff")
        let filled = RevisionTreeFixture.body(#"{"old":2}"#)
        XCTAssertEqual(tree.merge(history: revs("2-b", "1-a"), deleted: true, body: filled, attachments: [attachment]), .added)
        XCTAssertEqual(tree.node(rev("2-b")), RevisionTree.Node(revision: rev("2-b"), parent: tree.index(of: rev("1-a")),
                                                                deleted: true, body: filled, attachments: [attachment]))
        XCTAssertEqual(tree.nodes.count, 3)
        let before = tree
        XCTAssertEqual(tree.merge(history: revs("2-b", "1-a"), deleted: false, body: body, attachments: []), .alreadyPresent)
        XCTAssertEqual(tree, before, "a body, once known, is not replaced")
    }

    func testMergeLearnsThatABodilessRevisionIsATombstone() {
        var tree = RevisionTree()
        tree.merge(history: revs("2-b", "1-a"), deleted: false, body: nil, attachments: [])
        XCTAssertEqual(tree.merge(history: revs("2-b", "1-a"), deleted: true, body: nil, attachments: []), .added)
        XCTAssertEqual(tree.node(rev("2-b"))?.deleted, true)
    }

    func testMergeReattachesHistoryOlderThanAStemmedRoot() {
        var tree = RevisionTree()
        tree.merge(history: revs("5-e", "4-d", "3-c", "2-b", "1-a"), deleted: false, body: body, attachments: [])
        XCTAssertEqual(tree.stem(limit: 2), 3)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("4-d", "5-e"))

        XCTAssertEqual(tree.merge(history: revs("6-f", "5-e", "4-d", "3-c", "2-b", "1-a"), deleted: false, body: body, attachments: []), .added)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("1-a", "2-b", "3-c", "4-d", "5-e", "6-f"), "no duplicates")
        XCTAssertEqual(tree.history(of: rev("6-f")), revs("6-f", "5-e", "4-d", "3-c", "2-b", "1-a"))
        XCTAssertEqual(tree.nodes.filter { $0.parent == nil }.map(\.revision), revs("1-a"), "one root again")
        XCTAssertEqual(tree.node(rev("5-e"))?.body, body, "the stemmed tree's bodies survive")
        XCTAssertEqual(tree.stem(limit: 2), 4)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("5-e", "6-f"))
    }

    func testMergeOfOnlyOlderHistoryReachesBelowTheRoot() {
        var tree = RevisionTree()
        tree.merge(history: revs("4-d", "3-c"), deleted: false, body: body, attachments: [])
        XCTAssertEqual(tree.merge(history: revs("4-d", "3-c", "2-b", "1-a"), deleted: false, body: nil, attachments: []), .added)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.history(of: rev("4-d")), revs("4-d", "3-c", "2-b", "1-a"))
        XCTAssertEqual(tree.node(rev("4-d"))?.body, body)
    }

    func testMergeJoinsDisjointBranchesWhenTheGapArrives() {
        var tree = RevisionTree()
        tree.merge(history: revs("2-b", "1-a"), deleted: false, body: body, attachments: [])
        tree.merge(history: revs("5-e", "4-d"), deleted: false, body: body, attachments: [])
        XCTAssertEqual(tree.nodes.filter { $0.parent == nil }.count, 2)
        XCTAssertEqual(tree.merge(history: revs("4-d", "3-c", "2-b"), deleted: false, body: nil, attachments: []), .added)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.filter { $0.parent == nil }.map(\.revision), revs("1-a"))
        XCTAssertEqual(tree.history(of: rev("5-e")), revs("5-e", "4-d", "3-c", "2-b", "1-a"))
        XCTAssertEqual(tree.leaves.map(\.revision), revs("5-e"))
        XCTAssertEqual(tree.conflicts, [])
    }

    func testMergeCutsTheHistoryAtAGenerationGap() {
        var tree = RevisionTree()
        tree.merge(history: revs("5-e", "4-d", "2-b", "1-a"), deleted: false, body: body, attachments: [])
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("4-d", "5-e"))
        XCTAssertNil(tree.node(rev("4-d"))?.parent)
    }

    func testMergeStopsAtAHistoryThatContradictsAKnownParent() {
        var tree = RevisionTree()
        tree.merge(history: revs("3-c", "2-b", "1-a"), deleted: false, body: body, attachments: [])
        XCTAssertEqual(tree.merge(history: revs("4-d", "3-c", "2-x", "1-a"), deleted: false, body: body, attachments: []), .added)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("1-a", "2-b", "3-c", "4-d"))
        XCTAssertEqual(tree.history(of: rev("4-d")), revs("4-d", "3-c", "2-b", "1-a"))
    }

    func testMergeOfAThousandRevisionHistoryAndAThousandExtensions() {
        var tree = RevisionTree()
        let chain = (1...1000).reversed().map { RevisionID(generation: $0, digest: "d\($0)") }
        XCTAssertEqual(tree.merge(history: chain, deleted: false, body: body, attachments: []), .added)
        for generation in 1001...2000 {
            let history = [RevisionID(generation: generation, digest: "d\(generation)"),
                           RevisionID(generation: generation - 1, digest: "d\(generation - 1)")]
            XCTAssertEqual(tree.merge(history: history, deleted: false, body: body, attachments: []), .added)
        }
        tree.addRevision(RevisionID(generation: 501, digest: "branch"), parent: RevisionID(generation: 500, digest: "d500"),
                         deleted: false, body: body, attachments: [])
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.count, 2001)
        XCTAssertEqual(tree.winner?.revision, RevisionID(generation: 2000, digest: "d2000"))
        XCTAssertEqual(tree.history(of: RevisionID(generation: 2000, digest: "d2000")).count, 2000)
        XCTAssertEqual(tree.conflicts, [RevisionID(generation: 501, digest: "branch")])
    }

    /// The property that makes peers converge: the same histories merged in any
    /// order give the same tree, and the tree is exactly the union of the histories.
    func testMergingTheSameHistoriesInAnyOrderGivesTheSameTree() {
        var random = RevisionTreeFixture.Random(seed: 2024)
        for round in 0..<150 {
            let universe = RevisionTreeFixture.randomTree(size: Int.random(in: 1...30, using: &random), using: &random)
            // Every leaf's history, plus some interior revisions'; some cut short, as stemmed peers send them.
            var sources = universe.nodes.indices.filter(universe.isLeaf)
            sources += universe.nodes.indices.filter { _ in random.next() % 3 == 0 }
            let histories: [(history: [RevisionID], node: RevisionTree.Node)] = sources.map { index in
                let node = universe.nodes[index]
                var history = universe.history(of: node.revision)
                if random.next() % 3 == 0 { history = Array(history.prefix(Int.random(in: 1...history.count, using: &random))) }
                return (history, node)
            }

            // The expected tree, from the histories alone.
            var parents: [RevisionID: RevisionID] = [:]
            var known = Set<RevisionID>()
            var tombstones = Set<RevisionID>()
            for (history, node) in histories {
                known.formUnion(history)
                for (child, parent) in zip(history, history.dropFirst()) { parents[child] = parent }
                if node.deleted { tombstones.insert(node.revision) }
            }
            let expected = Set(known.map { RevisionTreeFixture.Edge(revision: $0, parent: parents[$0], deleted: tombstones.contains($0)) })
            let interior = Set(parents.values)
            let expectedWinner = known.filter { !interior.contains($0) }.max { lhs, rhs in
                let (lhsLive, rhsLive) = (!tombstones.contains(lhs), !tombstones.contains(rhs))
                if lhsLive != rhsLive { return rhsLive }
                if lhs.generation != rhs.generation { return lhs.generation < rhs.generation }
                return Array(lhs.digest.utf8).lexicographicallyPrecedes(Array(rhs.digest.utf8))
            }

            var first: RevisionTree?
            for _ in 0..<6 {
                var tree = RevisionTree()
                for (history, node) in histories.shuffled(using: &random) {
                    tree.merge(history: history, deleted: node.deleted, body: node.body, attachments: node.attachments)
                }
                RevisionTreeFixture.assertValid(tree)
                XCTAssertEqual(RevisionTreeFixture.shape(tree), expected, "round \(round)")
                XCTAssertEqual(tree.winner?.revision, expectedWinner, "round \(round)")
                if let first {
                    XCTAssertEqual(tree, first, "round \(round): trees differ")
                    XCTAssertEqual(tree.encoded(), first.encoded(), "round \(round): encodings differ")
                } else {
                    first = tree
                }
            }
        }
    }

    func testMergeAgreesWithLocalEditsOfTheSameRevisions() {
        var random = RevisionTreeFixture.Random(seed: 99)
        for _ in 0..<100 {
            let local = RevisionTreeFixture.randomTree(size: Int.random(in: 1...30, using: &random), using: &random)
            var replica = RevisionTree()
            for index in local.nodes.indices.shuffled(using: &random) {
                let node = local.nodes[index]
                replica.merge(history: local.history(of: node.revision), deleted: node.deleted, body: node.body, attachments: node.attachments)
            }
            XCTAssertEqual(replica, local)
        }
    }
}

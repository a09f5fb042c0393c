import XCTest
@testable import Store

/// `revs_limit` pruning, and merging into a pruned tree.
final class RevisionTreeStemTests: XCTestCase {
    private func rev(_ text: String) -> RevisionID { RevisionTreeFixture.revision(text) }
    private func revs(_ texts: String...) -> [RevisionID] { texts.map(rev) }
    private let body = RevisionTreeFixture.body("{}")

    /// 1-a → 2-b → 3-c → 4-d → 5-e, and 2-b → 3-x.
    private func branchedTree() -> RevisionTree {
        var tree = RevisionTree()
        tree.merge(history: revs("5-e", "4-d", "3-c", "2-b", "1-a"), deleted: false, body: body, attachments: [])
        tree.merge(history: revs("3-x", "2-b", "1-a"), deleted: false, body: body, attachments: [])
        return tree
    }

    private func roots(_ tree: RevisionTree) -> [RevisionID] {
        tree.nodes.filter { $0.parent == nil }.map(\.revision)
    }

    func testLimitOneKeepsOnlyLeaves() {
        var tree = branchedTree()
        XCTAssertEqual(tree.stem(limit: 1), 4)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("3-x", "5-e"))
        XCTAssertEqual(roots(tree), revs("3-x", "5-e"))
        XCTAssertEqual(tree.winner?.revision, rev("5-e"))
        XCTAssertEqual(tree.conflicts, revs("3-x"))
    }

    func testLimitTwoSplitsATreeAtABranchPoint() {
        var tree = branchedTree()
        XCTAssertEqual(tree.stem(limit: 2), 2)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("2-b", "3-x", "4-d", "5-e"))
        XCTAssertEqual(roots(tree), revs("2-b", "4-d"))
        XCTAssertEqual(tree.history(of: rev("3-x")), revs("3-x", "2-b"))
        XCTAssertEqual(tree.history(of: rev("5-e")), revs("5-e", "4-d"))
        XCTAssertEqual(tree.stem(limit: 2), 0, "stemming again removes nothing")
    }

    func testTheNearestLeafDecides() {
        // 1-a is four revisions from 5-e but three from 3-x: it stays.
        var tree = branchedTree()
        let before = tree
        XCTAssertEqual(tree.stem(limit: 3), 0)
        XCTAssertEqual(tree, before)
        tree.addRevision(rev("4-x"), parent: rev("3-x"), deleted: false, body: body, attachments: [])
        XCTAssertEqual(tree.stem(limit: 3), 1)
        XCTAssertEqual(roots(tree), revs("2-b"))
        XCTAssertEqual(tree.history(of: rev("5-e")), revs("5-e", "4-d", "3-c", "2-b"))
        XCTAssertEqual(tree.history(of: rev("4-x")), revs("4-x", "3-x", "2-b"))
    }

    func testLimitBelowOneKeepsLeaves() {
        var tree = branchedTree()
        XCTAssertEqual(tree.stem(limit: 0), 4)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("3-x", "5-e"))
        XCTAssertEqual(tree.stem(limit: -3), 0)
        var empty = RevisionTree()
        XCTAssertEqual(empty.stem(limit: 1), 0)
    }

    func testLimitThousandOnALongHistoryWithAnOldBranch() {
        var tree = RevisionTree()
        let chain = (1...1500).reversed().map { RevisionID(generation: $0, digest: "x") }
        tree.merge(history: chain, deleted: false, body: body, attachments: [])
        tree.addRevision(rev("11-z"), parent: rev("10-x"), deleted: false, body: body, attachments: [])
        let unchanged = tree
        var small = unchanged
        XCTAssertEqual(small.stem(limit: 2000), 0)
        XCTAssertEqual(small, unchanged)

        // 11-z keeps its ancestors 1-x...10-x; the main line keeps 501-x...1500-x.
        XCTAssertEqual(tree.stem(limit: 1000), 490)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.count, 1011)
        XCTAssertEqual(tree.history(of: rev("1500-x")).count, 1000)
        XCTAssertEqual(tree.history(of: rev("1500-x")).last, rev("501-x"))
        XCTAssertEqual(tree.history(of: rev("11-z")).count, 11)
        XCTAssertEqual(roots(tree), revs("1-x", "501-x"))
        XCTAssertFalse(tree.contains(rev("11-x")))
        XCTAssertFalse(tree.contains(rev("500-x")))
    }

    func testStemKeepsExactlyTheLastRevisionsOfEveryPathOnRandomTrees() {
        var random = RevisionTreeFixture.Random(seed: 31)
        for _ in 0..<200 {
            let original = RevisionTreeFixture.randomTree(size: Int.random(in: 1...50, using: &random), using: &random)
            for limit in [1, 2, 3, 5, 1000] {
                var tree = original
                // CouchDB's definition: keep the newest `limit` revisions of each root-to-leaf path.
                let leaves = original.nodes.indices.filter(original.isLeaf).map { original.nodes[$0].revision }
                let kept = Set(leaves.flatMap { original.history(of: $0).prefix(limit) })
                XCTAssertEqual(tree.stem(limit: limit), original.nodes.count - kept.count)
                RevisionTreeFixture.assertValid(tree)
                XCTAssertEqual(Set(tree.nodes.map(\.revision)), kept)
                for node in tree.nodes {
                    let before = original.node(node.revision)!
                    let parent = before.parent.map { original.nodes[$0].revision }
                    let expectedParent = parent.flatMap { kept.contains($0) ? $0 : nil }
                    XCTAssertEqual(node.parent.map { tree.nodes[$0].revision }, expectedParent)
                    XCTAssertEqual(node.body, before.body)
                    XCTAssertEqual(node.deleted, before.deleted)
                }
                XCTAssertEqual(tree.winner, original.winner.map { winner in tree.node(winner.revision)! })
                XCTAssertEqual(tree.leaves.map(\.revision), original.leaves.map(\.revision))
            }
        }
    }

    func testMergeAfterStemmingExtendsAndReattaches() {
        var tree = RevisionTree()
        tree.merge(history: revs("5-e", "4-d", "3-c", "2-b", "1-a"), deleted: false, body: body, attachments: [])
        tree.stem(limit: 2)
        XCTAssertEqual(tree.merge(history: revs("6-f", "5-e", "4-d", "3-c"), deleted: false, body: body, attachments: []), .added)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("3-c", "4-d", "5-e", "6-f"))
        XCTAssertEqual(roots(tree), revs("3-c"))
        XCTAssertEqual(tree.stem(limit: 2), 2)
        XCTAssertEqual(tree.nodes.map(\.revision), revs("5-e", "6-f"))
    }

    func testMergeAfterStemmingOfABranchFromAStemmedAncestorIsADisjointConflict() {
        var tree = RevisionTree()
        tree.merge(history: revs("5-e", "4-d", "3-c", "2-b", "1-a"), deleted: false, body: body, attachments: [])
        tree.stem(limit: 2)
        // 4-y's history meets ours only at 3-c, which was stemmed away: nothing links 3-c to 4-d.
        XCTAssertEqual(tree.merge(history: revs("4-y", "3-c"), deleted: false, body: body, attachments: []), .added)
        RevisionTreeFixture.assertValid(tree)
        XCTAssertEqual(roots(tree), revs("3-c", "4-d"))
        XCTAssertEqual(tree.winner?.revision, rev("5-e"))
        XCTAssertEqual(tree.conflicts, revs("4-y"))
        // A longer history from another peer then joins the two.
        tree.merge(history: revs("5-e", "4-d", "3-c", "2-b"), deleted: false, body: body, attachments: [])
        XCTAssertEqual(roots(tree), revs("2-b"))
        XCTAssertEqual(tree.history(of: rev("4-y")), revs("4-y", "3-c", "2-b"))
        XCTAssertEqual(tree.history(of: rev("5-e")), revs("5-e", "4-d", "3-c", "2-b"))
    }
}

/// The revision tree of one document: every revision the store knows of, each
/// linked to its parent, with CouchDB's rules for choosing the winning leaf.
///
/// Nodes are kept sorted by revision id (generation, then digest). A parent's
/// generation is always one less than its child's, so a parent always comes
/// before its children; lookups are binary searches; and two trees that hold
/// the same revisions are equal, and encode to the same bytes, whatever order
/// the revisions arrived in. That is what lets peers converge.
///
/// A tree may have several roots: a root whose generation is above 1 is where
/// older history was stemmed away or never received, as in CouchDB.
///
/// ```swift
/// var tree = RevisionTree()
/// tree.addRevision(RevisionID("1-a")!, parent: nil, deleted: false, body: Array(#"{"n":1}"#.utf8), attachments: [])
/// tree.merge(history: [RevisionID("2-c")!, RevisionID("1-a")!], deleted: false, body: Array("{}".utf8), attachments: [])
/// tree.winner?.revision  // 2-c
/// ```
struct RevisionTree: Sendable, Hashable {
    /// One revision of the document.
    struct Node: Sendable, Hashable {
        /// The revision's id.
        var revision: RevisionID
        /// The index of the parent in `nodes`; `nil` for a root.
        var parent: Int?
        /// Whether the revision is a tombstone.
        var deleted: Bool
        /// The revision's JSON body text; `nil` when unknown (an ancestor learned
        /// only from a history) or compacted away.
        var body: [UInt8]?
        /// The revision's attachments; empty when unknown or compacted away.
        var attachments: [Attachment]
    }

    /// Every node, sorted by revision id, so parents precede their children.
    private(set) var nodes: [Node]

    /// An empty tree: a document with no revisions.
    init() {
        nodes = []
    }

    /// Decodes what `encoded()` produced; throws `.internal` when the bytes are
    /// truncated, corrupt, or of an unknown format version.
    init(decoding bytes: some Collection<UInt8>) throws(StoreError) {
        nodes = try Self.decodeNodes(bytes)
    }

    /// Decodes the revisions of what `encoded()` produced, without their bodies: enough to
    /// say which revisions the tree holds (``missing(_:)``), not to read or rewrite them.
    init(decodingRevisions bytes: UnsafeBufferPointer<UInt8>) throws(StoreError) {
        nodes = try Self.decodeNodes(bytes, bodies: false)
    }

    /// Whether the tree holds no revision at all.
    var isEmpty: Bool { nodes.isEmpty }

    // MARK: Lookup

    /// The position of `revision` in `nodes`, or `nil` when it is not in the tree.
    func index(of revision: RevisionID) -> Int? {
        let low = insertionPoint(of: revision)
        return low < nodes.count && nodes[low].revision == revision ? low : nil
    }

    /// The position of the first node that does not sort before `revision`.
    private func insertionPoint(of revision: RevisionID) -> Int {
        var low = 0
        var high = nodes.count
        while low < high {
            let middle = (low + high) >> 1
            if nodes[middle].revision < revision {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }

    /// The node of `revision`, or `nil` when it is not in the tree.
    func node(_ revision: RevisionID) -> Node? {
        index(of: revision).map { nodes[$0] }
    }

    /// Whether `revision` is in the tree (with or without a body).
    func contains(_ revision: RevisionID) -> Bool {
        index(of: revision) != nil
    }

    /// Whether the node at `index` has no children: a current revision of one branch.
    func isLeaf(_ index: Int) -> Bool {
        precondition(nodes.indices.contains(index), "node index out of range")
        // Children sort after their parent.
        for child in nodes[(index + 1)...] where child.parent == index {
            return false
        }
        return true
    }

    // MARK: Leaves and the winner

    /// Every leaf, best first: the winner, then the rest in the same order.
    var leaves: [Node] {
        leafIndices.map { nodes[$0] }.sorted(by: Self.ranksBefore)
    }

    /// The revision a plain read returns, chosen the same way on every peer: a
    /// live leaf beats a tombstone, then the higher generation, then the higher
    /// digest in ASCII order. When every leaf is deleted it is the best tombstone.
    var winner: Node? {
        var best: Node?
        for index in leafIndices {
            if let current = best, !Self.ranksBefore(nodes[index], current) { continue }
            best = nodes[index]
        }
        return best
    }

    /// The live leaves other than the winner, best first (CouchDB's `_conflicts`).
    var conflicts: [RevisionID] {
        leaves.dropFirst().filter { !$0.deleted }.map(\.revision)
    }

    /// The deleted leaves other than the winner, best first (CouchDB's `_deleted_conflicts`).
    var deletedConflicts: [RevisionID] {
        leaves.dropFirst().filter(\.deleted).map(\.revision)
    }

    /// `revision` followed by its ancestors back to its root, newest first, as
    /// `_revisions` lists them; empty when `revision` is not in the tree.
    func history(of revision: RevisionID) -> [RevisionID] {
        var result: [RevisionID] = []
        var current = index(of: revision)
        while let index = current {
            result.append(nodes[index].revision)
            current = nodes[index].parent
        }
        return result
    }

    /// How many leaves the tree has.
    var leafCount: Int { leafIndices.count }

    /// Positions of the nodes that have no children, in tree order.
    private var leafIndices: [Int] {
        let parents = hasChildren
        return nodes.indices.filter { !parents[$0] }
    }

    /// For each node, whether some node names it as parent.
    private var hasChildren: [Bool] {
        var result = [Bool](repeating: false, count: nodes.count)
        for node in nodes {
            if let parent = node.parent { result[parent] = true }
        }
        return result
    }

    /// CouchDB's leaf order: live before deleted, then higher revision id first.
    private static func ranksBefore(_ lhs: Node, _ rhs: Node) -> Bool {
        if lhs.deleted != rhs.deleted { return !lhs.deleted }
        return rhs.revision < lhs.revision
    }

    // MARK: Adding revisions

    /// Adds a revision made locally (`new_edits=true`) as a child of `parent`,
    /// or as a new root when `parent` is `nil`.
    ///
    /// The caller has checked that `parent` is a leaf of this tree; `revision`'s
    /// generation must be one more than the parent's. Nothing changes when
    /// `revision` is already in the tree.
    mutating func addRevision(_ revision: RevisionID, parent: RevisionID?, deleted: Bool, body: [UInt8]?, attachments: [Attachment]) {
        guard index(of: revision) == nil else { return }
        var parentReference = ParentReference.none
        if let parent {
            guard let parentIndex = index(of: parent) else {
                preconditionFailure("parent revision \(parent) is not in the tree")
            }
            precondition(revision.generation == parent.generation + 1, "revision \(revision) cannot be a child of \(parent)")
            parentReference = .existing(parentIndex)
        }
        let node = Node(revision: revision, parent: nil, deleted: deleted, body: body, attachments: attachments)
        insert([(node, parentReference)], links: [])
    }

    /// Merges a revision received from a peer (`new_edits=false`) with its
    /// history, as `_revisions` gives it: the revision, then its ancestors,
    /// newest first, one generation apart.
    ///
    /// The tree becomes the union of itself and the history: unknown revisions
    /// are added (ancestors without a body), a root of this tree gains the parent
    /// the history names, and a history that shares nothing with the tree
    /// becomes a separate branch with its own root. When the revision is already
    /// present without a body, what it lacks is filled in from `body`,
    /// `attachments` and `deleted`. The history is cut before the first entry that
    /// is not exactly one generation older than the previous one, and before an
    /// entry that contradicts a parent the tree already records.
    ///
    /// Merging the same histories in any order gives the same tree.
    @discardableResult
    mutating func merge(history: [RevisionID], deleted: Bool, body: [UInt8]?, attachments: [Attachment]) -> MergeOutcome {
        guard !history.isEmpty else { return .alreadyPresent }
        var count = 1
        while count < history.count, history[count].generation == history[count - 1].generation - 1 {
            count += 1
        }
        // Where each entry already is. Below a known entry, follow the tree's own
        // parent links; search only below a root or an unknown entry. Stop where
        // the history contradicts a parent the tree already records.
        var positions: [Int?] = [index(of: history[0])]
        positions.reserveCapacity(count)
        for entry in 1..<count {
            if let child = positions[entry - 1], let parent = nodes[child].parent {
                guard nodes[parent].revision == history[entry] else {
                    count = entry
                    break
                }
                positions.append(parent)
            } else {
                positions.append(index(of: history[entry]))
            }
        }

        // Fill in what a revision known only from history lacks. Each step only
        // adds knowledge, so the result does not depend on the order of merges.
        var changed = false
        if let position = positions[0], nodes[position].body == nil {
            var node = nodes[position]
            if let body {
                node.body = body
                node.attachments = attachments
                node.deleted = deleted
            } else {
                node.deleted = node.deleted || deleted
                if node.attachments.isEmpty { node.attachments = attachments }
            }
            if node != nodes[position] {
                nodes[position] = node
                changed = true
            }
        }

        // New nodes oldest first (tree order); each entry's parent is the next entry.
        var additions: [(node: Node, parent: ParentReference)] = []
        var additionIndex = [Int](repeating: -1, count: count)
        func reference(_ entry: Int) -> ParentReference {
            guard entry < count else { return .none }
            if let position = positions[entry] { return .existing(position) }
            return .new(additionIndex[entry])
        }
        for entry in stride(from: count - 1, through: 0, by: -1) where positions[entry] == nil {
            additionIndex[entry] = additions.count
            let node = entry == 0
                ? Node(revision: history[0], parent: nil, deleted: deleted, body: body, attachments: attachments)
                : Node(revision: history[entry], parent: nil, deleted: false, body: nil, attachments: [])
            additions.append((node, reference(entry + 1)))
        }
        var links: [(child: Int, parent: ParentReference)] = []
        for entry in 0..<(count - 1) {
            if let position = positions[entry], nodes[position].parent == nil {
                links.append((position, reference(entry + 1)))
            }
        }

        guard !additions.isEmpty || !links.isEmpty else { return changed ? .added : .alreadyPresent }
        insert(additions, links: links)
        return .added
    }

    /// Where a node being inserted finds its parent.
    private enum ParentReference {
        /// A root.
        case none
        /// A node already in `nodes`, by its current index.
        case existing(Int)
        /// Another node of the same insertion, by its position in the additions.
        case new(Int)
    }

    /// Merges `additions` (sorted by revision, none already present) into
    /// `nodes`, and gives the existing roots in `links` their parents.
    private mutating func insert(_ additions: [(node: Node, parent: ParentReference)], links: [(child: Int, parent: ParentReference)]) {
        // The usual edit: every addition sorts after every node, so indexes stay put.
        if links.isEmpty, let first = additions.first, nodes.last.map({ $0.revision < first.node.revision }) ?? true {
            let base = nodes.count
            for addition in additions {
                var node = addition.node
                switch addition.parent {
                case .none: node.parent = nil
                case .existing(let index): node.parent = index
                case .new(let index): node.parent = base + index
                }
                nodes.append(node)
            }
            return
        }
        // A few revisions among many (a conflicting leaf): insert each in place
        // and move the parent indexes past it, rather than copy every node.
        if links.isEmpty, additions.count <= 8 {
            var placed: [Int] = []
            for addition in additions {
                var node = addition.node
                switch addition.parent {
                case .none:
                    node.parent = nil
                case .existing(let index):
                    // Each earlier addition sorts after the one before it, so each
                    // moved this index if it went in at or before it.
                    var moved = index
                    for position in placed where position <= moved { moved += 1 }
                    node.parent = moved
                case .new(let index):
                    node.parent = placed[index]
                }
                let position = insertionPoint(of: node.revision)
                for later in position..<nodes.count {
                    if let parent = nodes[later].parent, parent >= position { nodes[later].parent = parent + 1 }
                }
                nodes.insert(node, at: position)
                placed.append(position)
            }
            return
        }
        var merged: [Node] = []
        merged.reserveCapacity(nodes.count + additions.count)
        var oldPosition = [Int](repeating: 0, count: nodes.count)
        var newPosition = [Int](repeating: 0, count: additions.count)
        func resolve(_ reference: ParentReference) -> Int? {
            switch reference {
            case .none: nil
            case .existing(let index): oldPosition[index]
            case .new(let index): newPosition[index]
            }
        }
        var old = 0
        var new = 0
        // A parent sorts before its child, so its new position is known when the child is placed.
        while old < nodes.count || new < additions.count {
            if new == additions.count || (old < nodes.count && nodes[old].revision < additions[new].node.revision) {
                var node = nodes[old]
                node.parent = node.parent.map { oldPosition[$0] }
                oldPosition[old] = merged.count
                merged.append(node)
                old += 1
            } else {
                var node = additions[new].node
                node.parent = resolve(additions[new].parent)
                newPosition[new] = merged.count
                merged.append(node)
                new += 1
            }
        }
        for link in links {
            merged[oldPosition[link.child]].parent = resolve(link.parent)
        }
        nodes = merged
    }

    // MARK: Pruning

    /// Applies `revs_limit`: keeps only revisions fewer than `limit` generations
    /// above some leaf (a leaf itself counts as one), and returns how many were
    /// removed. A node whose parent is removed becomes a root, so a tree may
    /// split into several. A `limit` below 1 is taken as 1: leaves always stay.
    @discardableResult
    mutating func stem(limit: Int) -> Int {
        let limit = max(limit, 1)
        guard nodes.count > limit else { return 0 }
        // Distance to the nearest leaf below; children sort after their parent.
        var distance = [Int](repeating: Int.max, count: nodes.count)
        for index in nodes.indices.reversed() {
            if distance[index] == Int.max { distance[index] = 0 }
            if let parent = nodes[index].parent, distance[index] + 1 < distance[parent] {
                distance[parent] = distance[index] + 1
            }
        }
        var newIndex = [Int?](repeating: nil, count: nodes.count)
        var kept: [Node] = []
        kept.reserveCapacity(nodes.count)
        for index in nodes.indices where distance[index] < limit {
            var node = nodes[index]
            node.parent = node.parent.flatMap { newIndex[$0] }
            newIndex[index] = kept.count
            kept.append(node)
        }
        let removed = nodes.count - kept.count
        if removed > 0 { nodes = kept }
        return removed
    }

    /// Drops the body and attachments of every revision that is not a leaf:
    /// only leaves can be read, so only they need their content.
    mutating func compact() {
        let parents = hasChildren
        for index in nodes.indices where parents[index] {
            nodes[index].body = nil
            nodes[index].attachments = []
        }
    }

    /// Takes the bodies of revisions that are no longer leaves out of the tree
    /// and returns those nodes, so the store can keep them aside until
    /// compaction while the tree stays small. Attachment records stay.
    mutating func removeAncestorBodies() -> [Node] {
        let parents = hasChildren
        var removed: [Node] = []
        for index in nodes.indices where parents[index] && nodes[index].body != nil {
            removed.append(nodes[index])
            nodes[index].body = nil
        }
        return removed
    }

    // MARK: Replication

    /// Answers `_revs_diff` for this document: which of `revisions` the tree
    /// lacks (each once, in the order asked), and the leaves whose generation
    /// is below the highest missing one, which the sender may use as the base
    /// of what it sends (CouchDB's `possible_ancestors`, best first).
    func missing(_ revisions: [RevisionID]) -> (missing: [RevisionID], possibleAncestors: [RevisionID]) {
        var missing: [RevisionID] = []
        // Repeats are found by hashing only in long questions: most name one or two revisions.
        var seen: Set<RevisionID>? = revisions.count > 8 ? [] : nil
        for revision in revisions where index(of: revision) == nil {
            if seen != nil {
                guard seen!.insert(revision).inserted else { continue }
            } else if missing.contains(revision) {
                continue
            }
            missing.append(revision)
        }
        guard let highest = missing.lazy.map(\.generation).max() else { return ([], []) }
        let ancestors = leaves.lazy.map(\.revision).filter { $0.generation < highest }
        return (missing, Array(ancestors))
    }
}

/// What `RevisionTree.merge(history:deleted:body:attachments:)` did.
enum MergeOutcome: Sendable, Hashable {
    /// The tree already knew everything the history says: nothing changed.
    case alreadyPresent
    /// The tree changed: revisions were added, a root gained its parent, or a
    /// body was filled in. The tree needs saving.
    case added
}

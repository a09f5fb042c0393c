extension RevisionTree {
    /// The leaves below `revision` (itself, if it is a leaf), best first.
    func leaves(descendingFrom revision: RevisionID) -> [Node] {
        guard let start = index(of: revision) else { return [] }
        return leaves.filter { leaf in
            var current = index(of: leaf.revision)
            while let index = current {
                if index == start { return true }
                current = nodes[index].parent
            }
            return false
        }
    }

    /// The tree without the named leaves (all leaves when `nil`) and without
    /// the ancestors that only they had. Returns the purged revisions.
    func purging(_ revisions: [RevisionID]?) -> (RevisionTree, [RevisionID]) {
        let targets = Set(revisions ?? leaves.map(\.revision))
        let purged = leaves.map(\.revision).filter { targets.contains($0) }
        guard !purged.isEmpty else { return (self, []) }
        var kept = RevisionTree()
        for leaf in leaves where !targets.contains(leaf.revision) {
            let history = history(of: leaf.revision)
            for (offset, revision) in history.enumerated().reversed() {
                guard let node = node(revision), !kept.contains(revision) else { continue }
                let parent = offset + 1 < history.count ? history[offset + 1] : nil
                kept.addRevision(revision, parent: parent, deleted: node.deleted, body: node.body, attachments: node.attachments)
            }
        }
        return (kept, purged)
    }
}

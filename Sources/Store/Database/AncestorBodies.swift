/// Bodies of revisions that are no longer leaves, kept beside the revision
/// tree until compaction (CouchDB serves them by `?rev=` until then).
enum AncestorBodies {
    static func keep(_ nodes: [RevisionTree.Node], id: String, in db: Connection) throws {
        guard !nodes.isEmpty else { return }
        let insert = try db.statement("INSERT OR REPLACE INTO ancestor_bodies(id, rev, body) VALUES (?, ?, ?)")
        for node in nodes {
            guard let body = node.body else { continue }
            insert.reset()
            insert.bind(id, at: 1)
            insert.bind(node.revision.description, at: 2)
            insert.bind(body, at: 3)
            try insert.run()
        }
    }

    static func body(id: String, revision: RevisionID, in db: Connection) throws -> [UInt8]? {
        let select = try db.statement("SELECT body FROM ancestor_bodies WHERE id = ? AND rev = ?")
        select.bind(id, at: 1)
        select.bind(revision.description, at: 2)
        return try select.step() ? select.blob(0) : nil
    }

    static func revisions(id: String, in db: Connection) throws -> Set<RevisionID> {
        let select = try db.statement("SELECT rev FROM ancestor_bodies WHERE id = ?")
        select.bind(id, at: 1)
        var revisions = Set<RevisionID>()
        while try select.step() {
            if let revision = RevisionID(select.string(0)) { revisions.insert(revision) }
        }
        return revisions
    }

    /// Forgets the kept bodies of `id` that are not in `tree` (all of them when `tree` is nil).
    static func forget(id: String, except tree: RevisionTree?, in db: Connection) throws {
        let kept = tree.map { Set($0.nodes.map(\.revision)) } ?? []
        for revision in try revisions(id: id, in: db) where !kept.contains(revision) {
            let delete = try db.statement("DELETE FROM ancestor_bodies WHERE id = ? AND rev = ?")
            delete.bind(id, at: 1)
            delete.bind(revision.description, at: 2)
            try delete.run()
        }
    }
}

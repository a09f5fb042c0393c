/// One document's row while the writes of one job change it: its revision tree
/// is decoded once, changed in memory by each write, and encoded and stored
/// once, when the job moves to another document or ends.
///
/// So a batch holding many revisions of one document (a replicator sending
/// thousands of conflicting leaves) costs about what its revisions cost, not
/// one whole-tree decode and encode per revision. Each write still takes its
/// own sequence; the row ends with the last one, as if written one by one.
struct EditedRow {
    /// The document's id.
    let id: String
    /// The row as stored before this job, `nil` for a new document.
    let stored: (sequence: Int64, deleted: Bool)?
    /// The tree with this job's writes applied.
    var tree: RevisionTree
    /// Bodies taken out of the tree when their revisions stopped being leaves.
    private var ancestorBodies: [RevisionTree.Node] = []
    /// The sequence of the latest write; `nil` while no write changed the row.
    private var sequence: UInt64?
    /// The tree's encoded size when last measured: a write whose tree passes the size
    /// limit is refused only when it grows the tree past this.
    private var measuredSize: Int
    /// At least the size `tree` would encode to now (measured size plus what each write may add).
    private var sizeBound: Int
    /// At least the number of leaves `tree` has now (exact when last counted, plus one per write).
    private var leafBound: Int

    /// The row of `id` as stored, or an empty tree when there is none.
    init(loading id: String, in connection: Connection) throws {
        self.id = id
        let select = try connection.statement("SELECT seq, deleted, tree FROM docs WHERE id = ?")
        defer { select.reset() }
        select.bind(id, at: 1)
        if try select.step() {
            let encoded = select.blob(2)
            stored = (select.int64(0), select.int(1) != 0)
            tree = try RevisionTree(decoding: encoded)
            measuredSize = encoded.count
        } else {
            stored = nil
            tree = RevisionTree()
            measuredSize = 0
        }
        sizeBound = measuredSize
        leafBound = tree.leafCount
    }

    /// Applies `change` to the tree as one write that may add at most one leaf and
    /// `addedBytes` of encoding (``RevisionTree/encodedSizeBound(digest:body:attachments:)``),
    /// then checks the document's limits. A write that would pass them is undone and
    /// throws 413; one that leaves the tree as it was (`change` returns false) takes no sequence.
    mutating func write(
        addedBytes: Int, in context: inout WriteContext, _ change: (inout RevisionTree) throws -> Bool
    ) throws {
        // Either limit may be passed: keep the tree to put back (a copy only near a limit).
        let mayPassLimit = leafBound >= context.maximumLeaves || sizeBound + addedBytes + slack > context.maximumTreeSize
        let before = mayPassLimit ? self : nil
        guard try change(&tree) else { return }
        leafBound += 1
        sizeBound += addedBytes
        if let before {
            if leafBound > context.maximumLeaves {
                let leaves = tree.leafCount
                if leaves > context.maximumLeaves, leaves > before.tree.leafCount {
                    self = before
                    throw StoreError.tooLarge("Document \(id) would have more than \(context.maximumLeaves) conflicting revisions")
                }
                leafBound = leaves
            }
            if sizeBound + slack > context.maximumTreeSize {
                let size = prune(revsLimit: context.revsLimit).count
                if size > context.maximumTreeSize, size > before.measuredSize {
                    self = before
                    throw StoreError.tooLarge("Document \(id) would have more than \(context.maximumTreeSize) bytes of revisions")
                }
            }
        }
        sequence = context.nextSequence()
    }

    /// How much the parent distances of the nodes already in the tree may grow in
    /// encoding as writes insert nodes between them (a varint of at most 4 bytes).
    private var slack: Int { 4 * tree.nodes.count }

    /// Stores the row if a write changed it: the tree stemmed to `revs_limit`, ancestors'
    /// bodies set aside, the winner and the latest sequence; the document counts follow.
    mutating func store(in context: inout WriteContext) throws {
        guard let sequence else { return }
        let encoded = prune(revsLimit: context.revsLimit)
        guard let winner = tree.winner else { throw StoreError.internal("empty revision tree") }
        let db = context.connection
        try AncestorBodies.keep(ancestorBodies, id: id, in: db)
        ancestorBodies = []
        if let stored {
            let update = try db.statement("UPDATE docs SET seq = ?, winner = ?, deleted = ?, tree = ?, relayed = ? WHERE seq = ?")
            defer { update.reset() }
            update.bind(Int64(sequence), at: 1)
            update.bind(winner.revision.description, at: 2)
            update.bind(winner.deleted ? 1 : 0, at: 3)
            update.bind(encoded, at: 4)
            update.bind(context.relayed ? 1 : 0, at: 5)
            update.bind(stored.sequence, at: 6)
            try update.run()
            if stored.deleted != winner.deleted {
                context.docCount += winner.deleted ? -1 : 1
                context.deletedCount += winner.deleted ? 1 : -1
            }
        } else {
            let insert = try db.statement("INSERT INTO docs(seq, id, winner, deleted, tree, relayed) VALUES (?, ?, ?, ?, ?, ?)")
            defer { insert.reset() }
            insert.bind(Int64(sequence), at: 1)
            insert.bind(id, at: 2)
            insert.bind(winner.revision.description, at: 3)
            insert.bind(winner.deleted ? 1 : 0, at: 4)
            insert.bind(encoded, at: 5)
            insert.bind(context.relayed ? 1 : 0, at: 6)
            try insert.run()
            if winner.deleted { context.deletedCount += 1 } else { context.docCount += 1 }
        }
        try IndexEntries.documentStored(id: id, body: winner.deleted ? nil : winner.body, in: &context)
        try ViewIndex.documentStored(id: id, body: winner.deleted ? nil : winner.body, in: &context)
        context.winnersWritten[id] = winner.revision
        self.sequence = nil
    }

    /// Stems the tree to `revsLimit`, sets the bodies of revisions that are no longer
    /// leaves aside, and returns its encoding, whose size becomes the measured one.
    private mutating func prune(revsLimit: Int) -> [UInt8] {
        tree.stem(limit: revsLimit)
        ancestorBodies += tree.removeAncestorBodies()
        let encoded = tree.encoded()
        measuredSize = encoded.count
        sizeBound = encoded.count
        return encoded
    }
}

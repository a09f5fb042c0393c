import FoundationEssentials

/// Applies one validated document to its row inside the writer's transaction.
enum DocumentUpdate {
    /// Applies `document` to `row`, the document's row as this job has it (loaded
    /// here when `nil`; the caller stores a row of another document first), or
    /// inserts a new document's row at once when it has none.
    static func apply(_ document: ParsedDocument, newEdits: Bool, row: inout EditedRow?, in context: inout WriteContext) throws -> RevisionID {
        let id = document.id!
        precondition(row == nil || row?.id == id, "the row of another document is still unstored")
        if row == nil {
            if newEdits, document.revision == nil, !document.hasStubs, let created = try create(document, in: &context) {
                return created
            }
            row = try EditedRow(loading: id, in: context.connection)
        }
        let tree = row!.tree
        if newEdits {
            let parent: RevisionID?
            if let given = document.revision {
                guard let index = tree.index(of: given), tree.isLeaf(index) else { throw StoreError.conflict }
                parent = given
            } else if let winner = tree.winner {
                guard winner.deleted else { throw StoreError.conflict }
                parent = winner.revision
            } else {
                parent = nil
            }
            let generation = (parent?.generation ?? 0) + 1
            let attachments = try resolve(document.attachments, generation: generation, parent: parent, in: tree)
            let digest = RevisionDigest.digest(
                parent: parent, deleted: document.deleted,
                canonicalBody: document.bodyText, attachments: attachments
            )
            let revision = RevisionID(generation: generation, digest: digest)
            if tree.contains(revision) { throw StoreError.conflict }
            let added = RevisionTree.encodedSizeBound(digest: digest, body: document.bodyText, attachments: attachments)
            try row!.write(addedBytes: added, in: &context) { tree in
                tree.addRevision(revision, parent: parent, deleted: document.deleted, body: document.bodyText, attachments: attachments)
                return true
            }
            return revision
        }
        let revision = document.revision!
        let history = document.history.isEmpty ? [revision] : document.history
        let attachments = try resolve(document.attachments, generation: revision.generation, parent: nil, in: tree)
        var added = RevisionTree.encodedSizeBound(digest: revision.digest, body: document.bodyText, attachments: attachments)
        for ancestor in history.dropFirst() {
            added += RevisionTree.encodedSizeBound(digest: ancestor.digest, body: nil, attachments: [])
        }
        try row!.write(addedBytes: added, in: &context) { tree in
            tree.merge(history: history, deleted: document.deleted, body: document.bodyText, attachments: attachments) == .added
        }
        return revision
    }

    /// Inserts a new document without looking it up first; `nil` if the id is
    /// taken, and the caller goes the usual way (a conflict, or a new revision
    /// on top of a tombstone).
    private static func create(_ document: ParsedDocument, in context: inout WriteContext) throws -> RevisionID? {
        let creation = try document.creation ?? Creation(document)
        let insert = try context.connection.statement(
            "INSERT INTO docs(seq, id, winner, deleted, tree, relayed) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING")
        insert.bind(Int64(context.lastSequence + 1), at: 1)
        insert.bind(document.id!, at: 2)
        insert.bind(creation.winner, at: 3)
        insert.bind(document.deleted ? 1 : 0, at: 4)
        insert.bind(creation.tree, at: 5)
        insert.bind(context.relayed ? 1 : 0, at: 6)
        try insert.run()
        guard context.connection.changes > 0 else { return nil }
        _ = context.nextSequence()
        if document.deleted { context.deletedCount += 1 } else { context.docCount += 1 }
        try IndexEntries.documentStored(id: document.id!, body: document.deleted ? nil : document.bodyText, in: &context)
        try ViewIndex.documentStored(id: document.id!, body: document.deleted ? nil : document.bodyText, in: &context)
        context.winnersWritten[document.id!] = creation.revision
        return creation.revision
    }

    /// A new document's first revision and its encoded one-node tree, made
    /// while validating (on any core) so the writer only inserts the row.
    struct Creation: Sendable {
        let revision: RevisionID
        let winner: String
        let tree: [UInt8]

        /// The first revision of `document`, which has no attachment stubs.
        init(_ document: ParsedDocument) throws {
            let attachments = try resolve(document.attachments, generation: 1, parent: nil, in: RevisionTree())
            let digest = RevisionDigest.bytes(parent: nil, deleted: document.deleted, canonicalBody: document.bodyText, attachments: attachments)
            revision = RevisionID(generation: 1, digest: RevisionDigest.hex(digest))
            winner = revision.description
            tree = RevisionTree.encodedFirstRevision(digest: digest, deleted: document.deleted, body: document.bodyText, attachments: attachments)
        }
    }

    /// Turns attachment inputs into attachment records: stubs are looked up in
    /// the parent revision (new edits) or anywhere in the tree by digest (replicated revisions).
    private static func resolve(
        _ inputs: [(name: String, input: ParsedDocument.AttachmentInput)],
        generation: Int, parent: RevisionID?, in tree: RevisionTree
    ) throws -> [Attachment] {
        try inputs.map { name, input in
            switch input {
            case .content(let staged, let contentType, let revpos, let encoding):
                return Attachment(name: name, contentType: contentType, length: encoding?.length ?? staged.length,
                                  digest: staged.digest, revpos: revpos ?? generation, key: staged.key,
                                  encoding: encoding.map { AttachmentEncoding(name: $0.name, length: staged.length) })
            case .stub(let digest):
                let candidates = parent.flatMap { tree.node($0) }.map { [$0] } ?? tree.nodes
                for node in candidates.reversed() {
                    if let found = node.attachments.first(where: { $0.name == name && (digest == nil || $0.digest == digest) }) {
                        return found
                    }
                }
                if parent == nil, let digest {
                    for node in tree.nodes {
                        if let found = node.attachments.first(where: { $0.digest == digest }) {
                            var renamed = found
                            renamed.name = name
                            return renamed
                        }
                    }
                }
                throw StoreError(.preconditionFailed, error: "missing_stub", reason: "Invalid attachment stub for \(name)")
            }
        }
    }
}

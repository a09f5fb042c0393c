import JSON

/// A requested revision of `open_revs`: found, or not in the tree.
public enum OpenRevision: Sendable, Hashable {
    /// The revision, with its body.
    case found(DocumentRevision)
    /// The revision is unknown, or its body is gone.
    case missing(RevisionID)
}

/// What `_revs_diff` answers for one document.
public struct RevisionsDifference: Sendable, Hashable {
    /// The document id.
    public let id: String
    /// Revisions the store does not have.
    public let missing: [RevisionID]
    /// Leaves the store has that may be ancestors of the missing ones.
    public let possibleAncestors: [RevisionID]

    /// The answer for one document.
    public init(id: String, missing: [RevisionID], possibleAncestors: [RevisionID]) {
        self.id = id
        self.missing = missing
        self.possibleAncestors = possibleAncestors
    }
}

/// A document's row: its current sequence and revision tree.
struct DocumentRow {
    let id: String
    let sequence: UInt64
    let tree: RevisionTree

    static func load(id: String, from db: Connection) throws -> DocumentRow? {
        let select = try db.statement("SELECT seq, tree FROM docs WHERE id = ?")
        select.bind(id, at: 1)
        guard try select.step() else { return nil }
        return DocumentRow(id: id, sequence: UInt64(select.int64(0)), tree: try RevisionTree(decoding: select.blob(1)))
    }

    /// The revision of `node` with its body; `nil` when the body is not stored.
    /// Leaves carry their bodies; an ancestor's body is looked up in
    /// `ancestor_bodies` when `db` is given. With `availability`, whether each
    /// revision of the history still has a body is looked up too (`_revs_info`).
    /// `leaves`, when given, are the tree's (computed once for many revisions of one document).
    /// Without `history`, the revision has neither history nor conflicts: its JSON form
    /// without special fields, what selectors and index keys read, is the same.
    func revision(at node: RevisionTree.Node, in db: Connection? = nil, availability: Bool = false,
                  leaves: ConflictingLeaves? = nil, history withHistory: Bool = true) throws -> DocumentRevision? {
        guard let text = try node.body ?? db.flatMap({ try AncestorBodies.body(id: id, revision: node.revision, in: $0) }) else {
            return nil
        }
        let body: JSON.Object
        do {
            guard case .object(let object) = try JSON(parsing: text) else { throw StoreError.internal("stored body of \(id) is not an object") }
            body = object
        } catch {
            throw StoreError.internal("stored body of \(id) is corrupt: \(error)")
        }
        let history = withHistory ? tree.history(of: node.revision) : []
        return DocumentRevision(
            id: id, revision: node.revision, deleted: node.deleted, body: body, attachments: node.attachments,
            history: history,
            leaves: leaves ?? (withHistory ? ConflictingLeaves(tree) : .none),
            sequence: sequence,
            availability: availability ? try self.availability(of: history, in: db) : []
        )
    }
}

extension DocumentRow {
    private func availability(of history: [RevisionID], in db: Connection?) throws -> [RevisionAvailability] {
        let aside = try db.map { try AncestorBodies.revisions(id: id, in: $0) } ?? []
        return history.map { revision in
            guard let node = tree.node(revision), node.body != nil || aside.contains(revision) else { return .missing }
            return node.deleted ? .deleted : .available
        }
    }
}

extension Database {
    /// The current (winning) revision of a document, or the given revision.
    ///
    /// Throws 404 `missing` for an unknown document or revision, and 404
    /// `deleted` when the current revision is a tombstone and none was named.
    public func document(id: String, revision: RevisionID? = nil) throws(StoreError) -> DocumentRevision {
        try read { db in
            guard let row = try DocumentRow.load(id: id, from: db), let winner = row.tree.winner else {
                throw StoreError.notFound("missing")
            }
            if let revision {
                guard let node = row.tree.node(revision), let found = try row.revision(at: node, in: db, availability: true) else {
                    throw StoreError.notFound("missing")
                }
                return found
            }
            guard !winner.deleted else { throw StoreError.notFound("deleted") }
            guard let found = try row.revision(at: winner, in: db, availability: true) else { throw StoreError.notFound("missing") }
            return found
        }
    }

    /// The leaves of a document (`revisions == nil`, CouchDB's `open_revs=all`)
    /// or the named revisions. With `latest`, a named revision that is no longer
    /// a leaf is answered with the leaves that descend from it.
    public func openRevisions(id: String, revisions: [RevisionID]?, latest: Bool = false) throws(StoreError) -> [OpenRevision] {
        try read { db in
            guard let row = try DocumentRow.load(id: id, from: db) else {
                if revisions == nil { throw StoreError.notFound("missing") }
                return revisions!.map { .missing($0) }
            }
            let leaves = ConflictingLeaves(row.tree)  // once, not once per revision
            guard let revisions else {
                return try row.tree.leaves.compactMap { node in try row.revision(at: node, leaves: leaves).map { .found($0) } }
            }
            var answers: [OpenRevision] = []
            var seen = Set<RevisionID>()
            for requested in revisions {
                var nodes: [RevisionTree.Node] = []
                if let node = row.tree.node(requested) {
                    nodes = latest ? row.tree.leaves(descendingFrom: requested) : [node]
                }
                if nodes.isEmpty {
                    answers.append(.missing(requested))
                    continue
                }
                for node in nodes where seen.insert(node.revision).inserted {
                    answers.append(try row.revision(at: node, in: db, leaves: leaves).map { .found($0) } ?? .missing(node.revision))
                }
            }
            return answers
        }
    }

    /// Whether `revision` is known, without reading the store, to be the winner of document
    /// `id`: true only for a document written lately (see `revsDiff`), false when unsure.
    /// What a replication's feed reader asks of each row, thousands a second.
    public func isRecentWinner(_ revision: RevisionID, of id: String) -> Bool {
        recentWinners.holds(revision, of: id)
    }

    /// ``isRecentWinner(_:of:)`` asked with the revision's text (`N-digest`) as a feed sent it.
    public func isRecentWinner(text revision: UnsafeBufferPointer<UInt8>, of id: String) -> Bool {
        recentWinners.holds(text: revision, of: id)
    }

    /// Which of the given revisions the store lacks, per document (`_revs_diff`).
    /// Documents with nothing missing are left out.
    public func revsDiff(_ request: [(id: String, revisions: [RevisionID])]) throws(StoreError) -> [RevisionsDifference] {
        // A document whose winner, just written, is all that is asked about lacks nothing.
        let held = recentWinners.holds(request)
        guard held.contains(false) else { return [] }
        return try read { db in
            var answer: [RevisionsDifference] = []
            // Trees are decoded where SQLite holds them, without bodies: only revisions are asked about.
            let select = try db.statement("SELECT tree FROM docs WHERE id = ?")
            for ((id, revisions), held) in zip(request, held) where !held {
                select.reset()
                select.bind(id, at: 1)
                guard try select.step() else {
                    if !revisions.isEmpty {
                        answer.append(RevisionsDifference(id: id, missing: revisions, possibleAncestors: []))
                    }
                    continue
                }
                let tree = try select.withBlob(0) { bytes throws(StoreError) in try RevisionTree(decodingRevisions: bytes) }
                let (missing, ancestors) = tree.missing(revisions)
                if !missing.isEmpty {
                    answer.append(RevisionsDifference(id: id, missing: missing, possibleAncestors: ancestors))
                }
            }
            select.reset()
            return answer
        }
    }

    /// The attachment `name` of the current revision, or of `revision`.
    public func attachment(documentID: String, name: String, revision: RevisionID? = nil) throws(StoreError) -> Attachment {
        let document = try self.document(id: documentID, revision: revision)
        guard let attachment = document.attachments.first(where: { $0.name == name }) else {
            throw StoreError.notFound("Document is missing attachment")
        }
        return attachment
    }

    /// The whole content of an attachment, decoded when stored encoded.
    public func attachmentContent(_ attachment: Attachment) throws(StoreError) -> [UInt8] {
        guard attachment.encoding != nil else { return try attachments.read(attachment.key) }
        return try attachmentReader(attachment).readAll()
    }

    /// The content of an attachment in pieces, decoded when stored encoded,
    /// so that large ones are never held whole in memory.
    public func attachmentReader(_ attachment: Attachment) throws(StoreError) -> AttachmentContentReader {
        try AttachmentContentReader(path: attachments.path(for: attachment.key), length: attachment.length,
                                    gzip: attachment.encoding != nil)
    }

    /// The file holding an attachment's stored bytes (``Attachment/storedLength``
    /// of them, encoded when ``Attachment/encoding`` says so), for streaming it out.
    public func attachmentPath(_ attachment: Attachment) -> String {
        attachments.path(for: attachment.key)
    }
}

import Foundation

extension Database {
    /// Writes documents in one transaction and returns a result per document, in order.
    ///
    /// With `newEdits` (the default) each document is a new edit: `_rev` must be a
    /// current leaf (or absent for a new or deleted document), and a new revision
    /// id is derived from the edit. With `newEdits: false` each document is an
    /// existing revision with its ancestry (`_revisions`), merged into the tree as
    /// replication requires; an already-known revision is accepted unchanged.
    public func bulkDocs(_ uploads: [DocumentUpload], newEdits: Bool = true) async throws(StoreError) -> [WriteResult] {
        let batch = BulkValidation(uploads) { [self] upload in
            let parsed = validate(upload, newEdits: newEdits)
            return ((try? parsed.get().document.id) ?? upload.json["_id"]?.stringValue ?? "", parsed)
        }
        defer {
            for staged in batch.staged { attachments.release(staged) }
            for upload in uploads {
                for staged in upload.staged.values { attachments.release(staged) }
            }
        }
        // A batch of one chunk is checked before it is queued, so concurrent
        // small writes are checked on their callers' cores. A larger one is
        // queued first and checked here while the writer applies the chunks
        // already checked (and checks some itself rather than wait).
        if batch.chunkCount == 1 { batch.checkRemaining() }
        let pending = submit { context in
            var results: [WriteResult] = []
            results.reserveCapacity(uploads.count)
            for index in 0..<batch.chunkCount {
                for (id, parsed) in batch.outcomes(ofChunk: index) {
                    results.append(WriteResult(id: id, result: parsed.flatMap { valid in
                        Result { () throws(StoreError) in try Self.apply(valid.document, newEdits: newEdits, in: &context) }
                    }))
                }
            }
            return results
        }
        batch.checkRemaining()
        return try await completion(of: pending)
    }

    /// A validated document passed by reference, so the bulk path copies a pointer, not the fields.
    final class ValidDocument: Sendable {
        let document: ParsedDocument
        init(_ document: ParsedDocument) { self.document = document }
    }

    /// Applies one validated document inside the writer's transaction.
    private static func apply(_ document: ParsedDocument, newEdits: Bool, in context: inout WriteContext) throws(StoreError) -> RevisionID {
        do {
            return document.isLocal
                ? try LocalDocuments.put(document, in: context.connection)
                : try DocumentUpdate.apply(document, newEdits: newEdits, in: &context)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .internal("\(error)")
        }
    }

    private func validate(_ upload: DocumentUpload, newEdits: Bool) -> Result<ValidDocument, StoreError> {
        var document: ParsedDocument
        do throws(StoreError) {
            document = try DocumentValidation.parse(upload, store: attachments)
        } catch {
            return .failure(error)
        }
        do throws(StoreError) {
            if document.id == nil {
                guard newEdits else { throw .badRequest("Document id is required with new_edits=false") }
                document.id = Self.newDocumentID()
            }
            if !newEdits, document.revision == nil, !document.isLocal {
                throw .badRequest("Document rev is required with new_edits=false")
            }
            if document.bodyText.count > options.maximumDocumentSize {
                throw .tooLarge("Document exceeds \(options.maximumDocumentSize) bytes")
            }
            if newEdits, document.revision == nil, !document.isLocal, !document.hasStubs {
                document.creation = try? DocumentUpdate.Creation(document)
            }
            return .success(ValidDocument(document))
        } catch {
            for staged in document.staged { attachments.release(staged) }
            return .failure(error)
        }
    }

    /// Writes one document and returns its new revision; throws what the bulk result would carry.
    @discardableResult
    public func put(_ json: JSON, newEdits: Bool = true, staged: [String: StagedAttachment] = [:]) async throws(StoreError) -> WriteResult {
        let result = try await bulkDocs([DocumentUpload(json, staged: staged)], newEdits: newEdits)[0]
        _ = try result.result.get()
        return result
    }

    /// Deletes a document: a new tombstone revision on top of `revision`.
    @discardableResult
    public func delete(id: String, revision: RevisionID) async throws(StoreError) -> RevisionID {
        try await put(["_id": .string(id), "_rev": .string(revision.description), "_deleted": true]).result.get()
    }

    /// Writes `bytes` as attachment content for a following write.
    public func stageAttachment(_ bytes: some Collection<UInt8>) throws(StoreError) -> StagedAttachment {
        try attachments.stage(bytes)
    }

    /// Streams attachment content to its file for a following write; at most
    /// one chunk is held in memory. Fails with 413 past `limit` bytes.
    public func stageAttachment<Chunks: AsyncSequence>(_ chunks: Chunks, limit: Int) async throws -> StagedAttachment
    where Chunks.Element: Collection<UInt8> {
        try await attachments.stage(chunks, limit: limit)
    }

    /// Releases staged content, so compaction may delete its file unless a
    /// revision refers to it. A write given the content releases it when it
    /// ends; calling this as well, or twice, is harmless, so an upload can
    /// release everything it staged on every path (`defer`), failed part-way or not.
    public func discardStaged(_ staged: StagedAttachment) {
        attachments.release(staged)
    }

    /// A new random id: 32 lower-case hex digits, as CouchDB makes document ids, database
    /// uuids and `_uuids`.
    public static func newDocumentID() -> String {
        UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }
}

/// Applies one validated document to its row inside the writer's transaction.
enum DocumentUpdate {
    static func apply(_ document: ParsedDocument, newEdits: Bool, in context: inout WriteContext) throws -> RevisionID {
        if newEdits, document.revision == nil, !document.hasStubs, let created = try create(document, in: &context) {
            return created
        }
        let id = document.id!
        let db = context.connection
        let select = try db.statement("SELECT seq, deleted, tree FROM docs WHERE id = ?")
        select.bind(id, at: 1)
        var previous: (sequence: Int64, deleted: Bool, size: Int)?
        var tree = RevisionTree()
        if try select.step() {
            let encoded = select.blob(2)
            previous = (select.int64(0), select.int(1) != 0, encoded.count)
            tree = try RevisionTree(decoding: encoded)
        }
        select.reset()
        let leavesBefore = tree.leafCount

        let revision: RevisionID
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
            revision = RevisionID(generation: generation, digest: digest)
            if tree.contains(revision) { throw StoreError.conflict }
            tree.addRevision(revision, parent: parent, deleted: document.deleted, body: document.bodyText, attachments: attachments)
        } else {
            revision = document.revision!
            let history = document.history.isEmpty ? [revision] : document.history
            let attachments = try resolve(document.attachments, generation: revision.generation, parent: nil, in: tree)
            let outcome = tree.merge(history: history, deleted: document.deleted, body: document.bodyText, attachments: attachments)
            if outcome == .alreadyPresent { return revision }
        }
        let leaves = tree.leafCount
        if leaves > context.maximumLeaves, leaves > leavesBefore {
            throw StoreError.tooLarge("Document \(id) would have more than \(context.maximumLeaves) conflicting revisions")
        }
        _ = tree.stem(limit: context.revsLimit)
        let ancestorBodies = tree.removeAncestorBodies()
        guard let winner = tree.winner else { throw StoreError.internal("empty revision tree") }
        let encoded = tree.encoded()
        if encoded.count > context.maximumTreeSize, encoded.count > previous?.size ?? 0 {
            throw StoreError.tooLarge("Document \(id) would have more than \(context.maximumTreeSize) bytes of revisions")
        }
        try AncestorBodies.keep(ancestorBodies, id: id, in: db)
        let sequence = context.nextSequence()
        if let previous {
            let update = try db.statement("UPDATE docs SET seq = ?, winner = ?, deleted = ?, tree = ? WHERE seq = ?")
            update.bind(Int64(sequence), at: 1)
            update.bind(winner.revision.description, at: 2)
            update.bind(winner.deleted ? 1 : 0, at: 3)
            update.bind(encoded, at: 4)
            update.bind(previous.sequence, at: 5)
            try update.run()
            if previous.deleted != winner.deleted {
                context.docCount += winner.deleted ? -1 : 1
                context.deletedCount += winner.deleted ? 1 : -1
            }
        } else {
            let insert = try db.statement("INSERT INTO docs(seq, id, winner, deleted, tree) VALUES (?, ?, ?, ?, ?)")
            insert.bind(Int64(sequence), at: 1)
            insert.bind(id, at: 2)
            insert.bind(winner.revision.description, at: 3)
            insert.bind(winner.deleted ? 1 : 0, at: 4)
            insert.bind(encoded, at: 5)
            try insert.run()
            if winner.deleted { context.deletedCount += 1 } else { context.docCount += 1 }
        }
        return revision
    }

    /// Inserts a new document without looking it up first; `nil` if the id is
    /// taken, and the caller goes the usual way (a conflict, or a new revision
    /// on top of a tombstone).
    private static func create(_ document: ParsedDocument, in context: inout WriteContext) throws -> RevisionID? {
        let creation = try document.creation ?? Creation(document)
        let insert = try context.connection.statement(
            "INSERT INTO docs(seq, id, winner, deleted, tree) VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING")
        insert.bind(Int64(context.lastSequence + 1), at: 1)
        insert.bind(document.id!, at: 2)
        insert.bind(creation.winner, at: 3)
        insert.bind(document.deleted ? 1 : 0, at: 4)
        insert.bind(creation.tree, at: 5)
        try insert.run()
        guard context.connection.changes > 0 else { return nil }
        _ = context.nextSequence()
        if document.deleted { context.deletedCount += 1 } else { context.docCount += 1 }
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

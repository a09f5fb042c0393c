import Dispatch
import FoundationEssentials
import Glibc
import JSON

extension Database {
    /// Writes documents in one transaction and returns a result per document, in order.
    ///
    /// With `newEdits` (the default) each document is a new edit: `_rev` must be a
    /// current leaf (or absent for a new or deleted document), and a new revision
    /// id is derived from the edit. With `newEdits: false` each document is an
    /// existing revision with its ancestry (`_revisions`), merged into the tree as
    /// replication requires; an already-known revision is accepted unchanged.
    /// `relayed`: a group member's pull is writing what another member had, so the
    /// documents it changes are left out of first-hand feeds (``ChangesOptions/firstHandOnly``).
    /// `author`: whom the write is for, as design documents' `validate_doc_update` functions
    /// see it when ``Options/designFunctions`` is set; a document they refuse fails alone.
    public func bulkDocs(
        _ uploads: [DocumentUpload], newEdits: Bool = true, relayed: Bool = false, author: WriteAuthor = .server
    ) async throws(StoreError) -> [WriteResult] {
        var judged = uploads
        if let functions = options.designFunctions {
            try await judge(&judged, newEdits: newEdits, author: author, by: functions)
        }
        let uploads = judged
        defer {
            if uploads.contains(where: { $0.json["_id"]?.stringValue?.hasPrefix("_design/") == true }) { designs.invalidate() }
        }
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
            // Writes grouped into the same transaction have their own marks.
            context.relayed = relayed
            defer { context.relayed = false }
            // Consecutive revisions of one document change its row once.
            var row: EditedRow?
            for index in 0..<batch.chunkCount {
                for (id, parsed) in batch.outcomes(ofChunk: index) {
                    if case .success(let valid) = parsed, !valid.document.isLocal, let open = row?.id, open != valid.document.id {
                        try row?.store(in: &context)
                        row = nil
                    }
                    results.append(WriteResult(id: id, result: parsed.flatMap { valid in
                        Result { () throws(StoreError) in try Self.apply(valid.document, newEdits: newEdits, row: &row, in: &context) }
                    }))
                }
            }
            try row?.store(in: &context)
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
    private static func apply(
        _ document: ParsedDocument, newEdits: Bool, row: inout EditedRow?, in context: inout WriteContext
    ) throws(StoreError) -> RevisionID {
        do {
            return document.isLocal
                ? try LocalDocuments.put(document, in: context.connection)
                : try DocumentUpdate.apply(document, newEdits: newEdits, row: &row, in: &context)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .internal("\(error)")
        }
    }

    private func validate(_ upload: DocumentUpload, newEdits: Bool) -> Result<ValidDocument, StoreError> {
        if let refusal = upload.refusal { return .failure(refusal) }
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
            // CouchDB's `max_document_size`: the body without `_id`, `_rev`, `_attachments`
            // and the other special members, so inline attachment data never counts.
            if document.bodyText.count > options.maximumDocumentSize {
                throw .documentTooLarge(id: document.id ?? "")
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
    public func put(
        _ json: JSON, newEdits: Bool = true, staged: [String: StagedAttachment] = [:], author: WriteAuthor = .server
    ) async throws(StoreError) -> WriteResult {
        let result = try await bulkDocs([DocumentUpload(json, staged: staged)], newEdits: newEdits, author: author)[0]
        _ = try result.result.get()
        return result
    }

    /// Deletes a document: a new tombstone revision on top of `revision`.
    @discardableResult
    public func delete(id: String, revision: RevisionID, author: WriteAuthor = .server) async throws(StoreError) -> RevisionID {
        try await put(["_id": .string(id), "_rev": .string(revision.description), "_deleted": true], author: author).result.get()
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

    /// Pins the file of a stored attachment, so compaction keeps it until
    /// ``discardStaged(_:)``: how a replicator sends it after the read that found
    /// it. Fails with `not_found` when the file is gone (the revision was compacted away).
    public func pinAttachment(_ attachment: Attachment) throws(StoreError) -> StagedAttachment {
        guard let staged = attachments.pin(attachment) else { throw .notFound("attachment content is gone") }
        return staged
    }

    /// The file holding staged (or pinned) content.
    public func stagedPath(_ staged: StagedAttachment) -> String {
        attachments.path(for: staged.key)
    }

    /// Releases staged content, so compaction may delete its file unless a
    /// revision refers to it. A write given the content releases it when it
    /// ends; calling this as well, or twice, is harmless, so an upload can
    /// release everything it staged on every path (`defer`), failed part-way or not.
    public func discardStaged(_ staged: StagedAttachment) {
        attachments.release(staged)
    }

    /// Makes every write acknowledged so far survive a power cut, as CouchDB's
    /// `_ensure_full_commit` promises. With `synchronous=NORMAL` SQLite appends a
    /// commit to its log without waiting for the disk; this waits for the log, and
    /// for the database file a checkpoint may have moved commits into. A replicator
    /// calls it before its checkpoint names what it wrote.
    public func ensureFullCommit() async throws(StoreError) {
        if options.fullSync { return }
        let files = [path + "-wal", path]
        let failure: String? = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(returning: files.lazy.compactMap(Self.sync).first)
            }
        }
        if let failure { throw .internal("cannot make database \(name) durable: \(failure)") }
    }

    /// Waits for the disk to hold `file`; a log that is not there has nothing to hold.
    /// Returns what failed, or `nil`.
    private static func sync(_ file: String) -> String? {
        let descriptor = Glibc.open(file, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 { return errno == ENOENT ? nil : "\(file): \(String(cString: strerror(errno)))" }
        defer { Glibc.close(descriptor) }
        return fsync(descriptor) == 0 ? nil : "\(file): \(String(cString: strerror(errno)))"
    }

    /// A new random id: 32 lower-case hex digits, as CouchDB makes document ids, database
    /// uuids and `_uuids`.
    public static func newDocumentID() -> String {
        UUID().uuidString.lowercased().replacing("-", with: "")
    }
}

import FoundationEssentials
import JSON

extension Database {
    /// The design documents whose `validate_doc_update` judges writes here, by id.
    public func validatingDesigns() throws(StoreError) -> [DesignDocument] {
        try designs.current { () throws(StoreError) in
            var options = AllDocsOptions()
            options.startKey = "_design/"
            options.endKey = "_design0"
            options.inclusiveEnd = false
            options.includeDocuments = true
            options.countsOffset = false
            return try allDocs(options).rows.compactMap { row in
                guard let document = row.document, case .string? = document.body["validate_doc_update"] else { return nil }
                return DesignDocument(id: row.id, revision: document.revision.description, document: document.json())
            }
        }
    }

    /// Judges `uploads` by the design documents' `validate_doc_update` functions, as CouchDB
    /// does before a write: each refused upload is marked with its refusal, and an upload with
    /// no id is given one first, since the functions see it. Not judged, as in CouchDB: `_local`
    /// documents, design documents (only admins and replicating peers write them: the listener sees to that),
    /// a replicated revision already stored, and an edit of a revision that is no leaf (the
    /// write is a conflict).
    func judge(_ uploads: inout [DocumentUpload], newEdits: Bool, author: WriteAuthor, by functions: any DesignFunctions) async throws(StoreError) {
        let designs = try validatingDesigns()
        guard !designs.isEmpty else { return }
        var found: [(index: Int, json: JSON.Object, id: String)] = []
        for index in uploads.indices {
            guard case .object(var fields) = uploads[index].json else { continue }  // refused when parsed
            var id = fields["_id"]?.stringValue
            if id == nil, newEdits, fields["_id"] == nil {
                id = Self.newDocumentID()
                fields["_id"] = .string(id!)
                uploads[index].json = .object(fields)
            }
            guard let id, !id.hasPrefix("_local/"), !id.hasPrefix("_design/") else { continue }
            found.append((index, fields, id))
        }
        guard !found.isEmpty else { return }
        let candidates = found
        let staged = uploads.map(\.staged)
        let context = ValidationContext(userContext: author.userContext(database: name), security: try security() ?? [:])
        // In rounds of at most `judgedBytes` of old documents read: a batch of edits of large
        // documents is judged without holding every one of them at once.
        var next = 0
        while next < candidates.count {
            let first = next
            let (proposals, end): ([(index: Int, update: ProposedUpdate)], Int) = try read { db in
                var made: [(index: Int, update: ProposedUpdate)] = []
                var bytes = 0
                var index = first
                while index < candidates.count, bytes < Self.judgedBytes {
                    let candidate = candidates[index]
                    index += 1
                    guard let (update, size) = try Self.proposal(candidate.json, id: candidate.id, newEdits: newEdits,
                                                                 staged: staged[candidate.index], in: db) else { continue }
                    made.append((candidate.index, update))
                    bytes += size
                }
                return (made, index)
            }
            next = end
            guard !proposals.isEmpty else { continue }
            let verdicts = await functions.validate(proposals.map(\.update), by: designs, context: context)
            for (proposal, verdict) in zip(proposals, verdicts) {
                uploads[proposal.index].refusal = verdict
            }
        }
    }

    /// How many bytes of stored documents one round of judging reads (see ``judge(_:newEdits:author:by:)``).
    static let judgedBytes = 16 << 20

    /// CouchDB's `newDoc` and `oldDoc` for one upload, with the size of the stored body read
    /// for `oldDoc`; `nil` when it is not judged.
    private static func proposal(
        _ fields: JSON.Object, id: String, newEdits: Bool, staged: [String: StagedAttachment], in db: Connection
    ) throws -> (ProposedUpdate, Int)? {
        let revision = fields["_rev"]?.stringValue.flatMap(RevisionID.init)
        let row = try DocumentRow.load(id: id, from: db)
        var history: [RevisionID] = []
        var old: DocumentRevision?
        var oldSize = 0
        if newEdits {
            if let revision {
                // An edit of what is not a leaf is a conflict, refused without judging.
                guard let row, let leaf = row.tree.leaves.first(where: { $0.revision == revision }) else { return nil }
                old = try row.revision(at: leaf, in: db)
                oldSize = leaf.body?.count ?? 0
                history = [revision]
            }
        } else {
            guard let revision else { return nil }  // refused when parsed
            if row?.tree.node(revision) != nil { return nil }  // already stored: nothing is written
            history = (fields["_revisions"].flatMap { try? DocumentValidation.parseRevisions($0) }) ?? [revision]
            // The leaf it extends, or on a new branch the nearest ancestor whose body is kept.
            for ancestor in history.dropFirst() {
                guard let row, let node = row.tree.node(ancestor), let found = try row.revision(at: node, in: db) else { continue }
                old = found
                oldSize = node.body?.count ?? 0
                break
            }
        }
        return (ProposedUpdate(newDocument: newDocument(fields, history: history, staged: staged), oldDocument: old.map(oldDocument)), oldSize)
    }

    /// A stored revision as validation functions see it: CouchDB's JSON with `_revisions`,
    /// cut to the 20 newest as its query server's `revs_limit`.
    private static func oldDocument(_ revision: DocumentRevision) -> JSON {
        guard case .object(var fields) = revision.json(.revisions) else { return revision.json() }
        if case .object(var revisions)? = fields["_revisions"], case .array(let ids)? = revisions["ids"], ids.count > 20 {
            revisions["ids"] = .array(Array(ids.prefix(20)))
            fields["_revisions"] = .object(revisions)
        }
        return .object(fields)
    }

    /// How many bytes base64 `text` holds, counted without decoding it (white space aside).
    private static func decodedLength(ofBase64 text: String) -> Int {
        var digits = 0, padding = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "=") { padding += 1 } else if byte > 32 { digits += 1 }
        }
        return max(0, (digits + padding) / 4 * 3 - padding)
    }

    /// The upload as validation functions see it: `_revisions` as CouchDB derives it, and
    /// attachments as stubs (what they are, not their content).
    private static func newDocument(_ fields: JSON.Object, history: [RevisionID], staged: [String: StagedAttachment]) -> JSON {
        var document = fields
        if document["_revisions"] == nil, let newest = history.first {
            document["_revisions"] = ["start": .number(Double(newest.generation)), "ids": .array(history.map { .string($0.digest) })]
        }
        if case .object(let attachments)? = fields["_attachments"] {
            var stubs = JSON.Object()
            for (name, entry) in attachments {
                guard case .object(var stub) = entry else { stubs[name] = entry; continue }
                if case .string(let data)? = stub.removeValue(forKey: "data") {
                    stub["length"] = .number(Double(Self.decodedLength(ofBase64: data)))
                } else if let content = staged[name], stub["follows"] != nil {
                    stub["length"] = stub["length"] ?? .number(Double(content.length))
                    stub["digest"] = stub["digest"] ?? .string(content.digest)
                }
                _ = stub.removeValue(forKey: "follows")
                stub["stub"] = true
                stubs[name] = .object(stub)
            }
            document["_attachments"] = .object(stubs)
        }
        return .object(document)
    }
}

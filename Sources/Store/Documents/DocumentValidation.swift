import FoundationEssentials
import JSON

/// The checks CouchDB makes on a document before writing it.
enum DocumentValidation {
    /// Top-level fields starting with `_` that a document may carry.
    static let specialFields: Set<String> = [
        "_id", "_rev", "_deleted", "_attachments", "_revisions", "_revs_info",
        "_conflicts", "_deleted_conflicts", "_local_seq",
    ]

    /// Checks a document id as CouchDB's `couch_doc:validate_docid` does: non-empty, not
    /// `_design/` or `_local/` alone, and only such ids may start with `_`. Any other
    /// Unicode text is an id, NUL included.
    static func validate(id: String) throws(StoreError) {
        guard !id.isEmpty else { throw .illegalDocID("Document id must not be empty") }
        if id == "_design/" || id == "_local/" { throw .illegalDocID("Illegal document id `\(id)`") }
        guard id.utf8.count <= 4096 else { throw .illegalDocID("Document id is too long") }
        if id.hasPrefix("_"), !id.hasPrefix("_design/"), !id.hasPrefix("_local/") {
            throw .illegalDocID("Only reserved document ids may start with underscore.")
        }
    }

    /// Splits and checks an upload. Inline attachment data is written to files
    /// here, before the write transaction, and pinned there until the write ends.
    static func parse(_ upload: DocumentUpload, id explicitID: String? = nil, store: AttachmentStore) throws(StoreError) -> ParsedDocument {
        guard case .object(let object) = upload.json else {
            throw .badRequest("Document must be a JSON object")
        }
        // CouchDB's special members aside; the body is every other member.
        var special: [(key: String, value: JSON)] = []
        for member in object.members where isSpecial(member.key) {
            guard specialFields.contains(member.key) else {
                throw StoreError(.badRequest, error: "doc_validation", reason: "Bad special document member: \(member.key)")
            }
            special.append(member)
        }
        func specialValue(_ key: String) -> JSON? { special.first { $0.key == key }?.value }

        var id: String? = explicitID
        if let value = specialValue("_id") {
            guard case .string(let given) = value else { throw .illegalDocID("Document id must be a string") }
            if let explicitID, explicitID != given {
                throw .badRequest("Document id must match the id in the URL")
            }
            id = given
        }
        if let id { try validate(id: id) }

        var revision: RevisionID?
        if let value = specialValue("_rev") {
            guard case .string(let text) = value else { throw .badRequest("Invalid rev format") }
            if id?.hasPrefix("_local/") == true, text.hasPrefix("0-"), let count = Int(text.dropFirst(2)), count >= 0 {
                revision = RevisionID(generation: 0, digest: String(count))
            } else if let parsed = RevisionID(text) {
                revision = parsed
            } else {
                throw .badRequest("Invalid rev format")
            }
        }

        var deleted = false
        if let value = specialValue("_deleted") {
            guard case .bool(let flag) = value else { throw .badRequest("_deleted must be a boolean") }
            deleted = flag
        }

        if !deleted, id?.hasPrefix("_design/") == true { try validateViews(of: upload.json) }

        var history: [RevisionID] = []
        if let value = specialValue("_revisions") {
            history = try parseRevisions(value)
            guard let revision else { throw .badRequest("_revisions given without _rev") }
            guard history.first == revision else {
                throw .badRequest("_rev \(revision) does not match _revisions")
            }
        }

        var attachments: [(name: String, input: ParsedDocument.AttachmentInput)] = []
        if let value = specialValue("_attachments") {
            guard case .object(let entries) = value else { throw .badRequest("_attachments must be an object") }
            guard entries.count <= Database.maximumAttachments else { throw .tooManyAttachments }
            do throws(StoreError) {
                for (name, entry) in entries {
                    attachments.append((name, try parseAttachment(name: name, entry, upload: upload, store: store)))
                }
            } catch {
                // Inline content staged before the failure is not going to be written.
                for case (_, .content(let staged, _, _, _)) in attachments { store.release(staged) }
                throw error
            }
        }
        var body: [UInt8] = []
        body.reserveCapacity(512)
        JSON.writeObject(object.members, to: &body, sortedKeys: true, omit: isSpecial)
        return ParsedDocument(id: id, revision: revision, history: history, deleted: deleted,
                              bodyText: body, attachments: attachments)
    }

    /// Checks a JavaScript design document's views as CouchDB's `couch_mrview:validate` does
    /// when it is written: 400 `invalid_design_doc`, so that no node stores views that could
    /// never be queried. (Compiling the functions is left to the query servers, when queried.)
    static func validateViews(of design: JSON) throws(StoreError) {
        func refuse(_ reason: String) -> StoreError { StoreError(.badRequest, error: "invalid_design_doc", reason: reason) }
        if let language = design["language"] {
            guard case .string(let name) = language else { throw refuse("`language` field must have string type") }
            guard name == "javascript" else { return }  // Mango's `query` indexes keep their own form
        }
        if let options = design["options"], options.objectValue == nil { throw refuse("`options` field must have object type") }
        guard let views = design["views"] else { return }
        guard case .object(let members) = views else { throw refuse("`views` field must have object type") }
        for (name, view) in members.members {
            if name == "lib" {
                guard view.objectValue != nil else { throw refuse("`views.lib` field must have object type") }
                continue
            }
            guard case .object = view else { throw refuse("`views.\(name)` field must have object type") }
            guard let map = view["map"] else { throw refuse("View `\(name)` must contain map function") }
            guard map.stringValue != nil else { throw refuse("`views.\(name).map` field must have string type") }
            if let reduce = view["reduce"] {
                guard let source = reduce.stringValue else { throw refuse("`views.\(name).reduce` field must have string type") }
                if BuiltinReduce.isBuiltin(source), BuiltinReduce(source: source) == nil {
                    throw refuse("`\(source.trimmingBlanks)` is not a supported reduce function.")
                }
            }
        }
    }

    /// Whether a top-level member is one of CouchDB's, not the body's.
    private static func isSpecial(_ key: String) -> Bool { key.utf8.first == UInt8(ascii: "_") }

    /// Reads `{"start": N, "ids": [...]}` into revision ids, newest first.
    static func parseRevisions(_ value: JSON) throws(StoreError) -> [RevisionID] {
        guard case .object(let revisions) = value,
              let start = revisions["start"]?.intValue, start >= 1,
              case .array(let ids)? = revisions["ids"], !ids.isEmpty, ids.count <= start
        else { throw .badRequest("_revisions must be {\"start\": N, \"ids\": [...]}") }
        var history: [RevisionID] = []
        history.reserveCapacity(ids.count)
        for (offset, id) in ids.enumerated() {
            guard case .string(let digest) = id, let revision = RevisionID("\(start - offset)-\(digest)") else {
                throw .badRequest("Invalid rev format in _revisions")
            }
            history.append(revision)
        }
        return history
    }

    /// The encoding of a `"follows": true` attachment's part, as CouchDB's
    /// replicator marks compressible ones: `"encoding": "gzip"`, `"length"` the
    /// decoded length, `"encoded_length"` the part's. The part must be gzip
    /// that decodes to exactly `length` bytes; `nil` when it is the content itself.
    private static func encoding(
        of name: String, _ fields: JSON.Object, staged: StagedAttachment, store: AttachmentStore
    ) throws(StoreError) -> (name: String, length: Int)? {
        guard let value = fields["encoding"], value != .string("identity") else { return nil }
        guard value == .string("gzip") else {
            throw .badRequest("Attachment \(name) has an unsupported encoding; only gzip is accepted")
        }
        guard let length = fields["length"]?.intValue, length >= 0 else {
            throw .badRequest("gzip-encoded attachment \(name) needs its decoded length")
        }
        if let encodedLength = fields["encoded_length"], encodedLength.intValue != staged.length {
            throw .badRequest("Attachment \(name) is \(staged.length) bytes, not its encoded_length")
        }
        let reader = try AttachmentContentReader(path: store.path(for: staged.key), length: length, gzip: true)
        while try reader.next() != nil {}
        return ("gzip", length)
    }

    private static func parseAttachment(
        name: String, _ entry: JSON, upload: DocumentUpload, store: AttachmentStore
    ) throws(StoreError) -> ParsedDocument.AttachmentInput {
        guard !name.isEmpty, !name.hasPrefix("_") else {
            throw .badRequest("Attachment name must not be empty or start with underscore")
        }
        guard case .object(let fields) = entry else { throw .badRequest("Attachment \(name) must be an object") }
        let contentType = fields["content_type"]?.stringValue ?? "application/octet-stream"
        let revpos = fields["revpos"]?.intValue
        if fields["stub"]?.boolValue == true {
            return .stub(digest: fields["digest"]?.stringValue)
        }
        if fields["follows"]?.boolValue == true {
            guard let staged = upload.staged[name] else {
                throw .badRequest("Attachment \(name) follows, but no content was sent for it")
            }
            if let digest = fields["digest"]?.stringValue, digest.hasPrefix("md5-"), digest != staged.digest {
                throw StoreError(.badRequest, error: "content_md5_mismatch", reason: "Possible message corruption.")
            }
            return .content(staged, contentType: contentType, revpos: revpos,
                            encoding: try encoding(of: name, fields, staged: staged, store: store))
        }
        guard case .string(let base64)? = fields["data"] else {
            throw .badRequest("Attachment \(name) needs data, follows or stub")
        }
        guard let data = Data(base64Encoded: base64, options: .ignoreUnknownCharacters) else {
            throw .badRequest("Invalid attachment data for \(name)")
        }
        let staged = try store.stage(data)
        return .content(staged, contentType: contentType, revpos: revpos)
    }
}

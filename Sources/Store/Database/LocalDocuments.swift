import JSON

/// A local document: never replicated, never in the changes feed, no
/// revision tree. Replication checkpoints live here.
public struct LocalDocument: Sendable, Hashable {
    /// The id, including its `_local/` prefix.
    public let id: String
    /// The revision, `0-N` where N counts the writes.
    public let revision: RevisionID
    /// The body's own fields.
    public let body: JSON.Object

    /// The document in CouchDB's JSON form.
    public var json: JSON {
        .object(JSON.Object(uniqueMembers: [("_id", .string(id)), ("_rev", .string(revision.description))] + body.members))
    }
}

/// Who may replace a local document: when one exists, its member `key` must be the string
/// `value`, or it counts as missing. Checked in the write's own transaction, so no other
/// write can come between the check and the change. The writer's documents are also held
/// to a size and a number (413 beyond): a writer that replicates needs a few small checkpoints.
public struct LocalDocumentClaim: Sendable, Hashable {
    /// The member naming the document's writer.
    public var key: String
    /// The writer it must name.
    public var value: String
    /// The largest body, in bytes, of one of the writer's documents.
    public var maximumSize: Int
    /// The most documents the writer may hold in the database.
    public var maximumCount: Int

    /// A claim that member `key` is `value`; by default 64 KiB a document and 100 documents.
    public init(key: String, value: String, maximumSize: Int = 64 << 10, maximumCount: Int = 100) {
        self.key = key
        self.value = value
        self.maximumSize = maximumSize
        self.maximumCount = maximumCount
    }
}

enum LocalDocuments {
    /// Writes or deletes a local document; `_rev` must name the current revision, and an
    /// existing document must satisfy `claim` (else it is missing).
    static func put(_ document: ParsedDocument, claim: LocalDocumentClaim? = nil, in db: Connection) throws -> RevisionID {
        let id = document.id!
        let select = try db.statement("SELECT rev, body FROM local_docs WHERE id = ?")
        select.bind(id, at: 1)
        let current: Int? = try select.step() ? select.int(0) : nil
        if current != nil, let claim, try JSON(parsing: select.blob(1))[claim.key]?.stringValue != claim.value {
            throw StoreError.notFound("missing")
        }
        select.reset()
        let given = document.revision.flatMap { Int($0.digest) }
        if current != given, !(current == nil && document.revision == nil) { throw StoreError.conflict }
        if document.deleted {
            guard current != nil else { throw StoreError.notFound("missing") }
            let delete = try db.statement("DELETE FROM local_docs WHERE id = ?")
            delete.bind(id, at: 1)
            try delete.run()
            return RevisionID(generation: 0, digest: "0")
        }
        if let claim {
            guard document.bodyText.count <= claim.maximumSize else {
                throw StoreError.tooLarge("A local document of this writer is at most \(claim.maximumSize) bytes.")
            }
            if current == nil, try count(of: claim, in: db) >= claim.maximumCount {
                throw StoreError.tooLarge("This writer holds \(claim.maximumCount) local documents here, the most it may.")
            }
        }
        let next = (current ?? 0) + 1
        let upsert = try db.statement("INSERT OR REPLACE INTO local_docs(id, rev, body) VALUES (?, ?, ?)")
        upsert.bind(id, at: 1)
        upsert.bind(next, at: 2)
        upsert.bind(document.bodyText, at: 3)
        try upsert.run()
        return RevisionID(generation: 0, digest: String(next))
    }

    /// How many local documents `claim`'s writer holds: those whose text holds its value, read to be sure.
    private static func count(of claim: LocalDocumentClaim, in db: Connection) throws -> Int {
        let select = try db.statement("SELECT body FROM local_docs WHERE instr(CAST(body AS TEXT), ?) > 0")
        select.bind(claim.value, at: 1)
        var count = 0
        while try select.step() {
            if try JSON(parsing: select.blob(0))[claim.key]?.stringValue == claim.value { count += 1 }
        }
        return count
    }
}

extension Database {
    /// Reads a local document; `id` includes the `_local/` prefix.
    public func localDocument(id: String) throws(StoreError) -> LocalDocument {
        try read { db in
            let select = try db.statement("SELECT rev, body FROM local_docs WHERE id = ?")
            select.bind(id, at: 1)
            guard try select.step() else { throw StoreError.notFound("missing") }
            guard case .object(let body) = try JSON(parsing: select.blob(1)) else { throw StoreError.internal("corrupt local document \(id)") }
            return LocalDocument(id: id, revision: RevisionID(generation: 0, digest: String(select.int(0))), body: body)
        }
    }

    /// Writes a local document. `json` may carry `_rev`, which must be the current one; an
    /// existing document that does not satisfy `claim` is missing (404) and stays as it is.
    @discardableResult
    public func putLocal(id: String, _ json: JSON, claim: LocalDocumentClaim? = nil) async throws(StoreError) -> RevisionID {
        guard id.hasPrefix("_local/"), id.count > 7 else { throw .badRequest("Local document ids start with _local/") }
        var object = json.objectValue ?? [:]
        if let given = object["_rev"]?.stringValue {
            guard given.hasPrefix("0-"), Int(given.dropFirst(2)) != nil else { throw .badRequest("Invalid rev format") }
            object["_rev"] = nil
        }
        let revision = json["_rev"]?.stringValue.map { RevisionID(generation: 0, digest: String($0.dropFirst(2))) }
        guard json.objectValue != nil else { throw .badRequest("Document must be a JSON object") }
        let deleted = object["_deleted"]?.boolValue ?? false
        for key in object.keys where key.hasPrefix("_") { object[key] = nil }
        let document = ParsedDocument(id: id, revision: revision, history: [], deleted: deleted,
                                      bodyText: JSON.object(object).serializedBytes(), attachments: [])
        // `max_document_size`, as for any document.
        if document.bodyText.count > options.maximumDocumentSize { throw .documentTooLarge(id: id) }
        return try await write { context in try LocalDocuments.put(document, claim: claim, in: context.connection) }
    }

    /// Deletes a local document; `revision` must be the current one, and the document must
    /// satisfy `claim` (else it is missing).
    public func deleteLocal(id: String, revision: RevisionID?, claim: LocalDocumentClaim? = nil) async throws(StoreError) {
        let document = ParsedDocument(id: id, revision: revision, history: [], deleted: true, bodyText: [], attachments: [])
        _ = try await write { context in try LocalDocuments.put(document, claim: claim, in: context.connection) }
    }
}

/// The entries of the database's JSON indexes, kept in step with the documents
/// inside the writer's transaction.
///
/// Each write of a document replaces its entries in the same transaction as the
/// document, so a query, which reads one snapshot, never sees an index behind
/// or ahead of the documents: no stale or deleted revision can come back, and a
/// conflict's losing leaves never count. (CouchDB updates its indexes lazily,
/// when queried; syncd's readers never write, so the writer does it.) A design
/// document that adds or changes an index builds it in its own transaction.
///
/// An entry is `(index, key, document id)`: the key is the collation sort keys
/// of the document's indexed values, so SQLite's byte order of keys is CouchDB's
/// collation order and a range of the index is a range of rows.
enum IndexEntries {
    /// An index with its row id in `query_indexes`.
    struct Stored: Sendable {
        let rowID: Int64
        let index: QueryIndex
    }

    static let schema = """
        CREATE TABLE IF NOT EXISTS query_indexes (
            id INTEGER PRIMARY KEY,
            ddoc TEXT NOT NULL,
            name TEXT NOT NULL,
            view TEXT NOT NULL,
            UNIQUE (ddoc, name)
        ) STRICT;
        CREATE TABLE IF NOT EXISTS query_entries (
            idx INTEGER NOT NULL,
            key BLOB NOT NULL,
            doc TEXT NOT NULL,
            PRIMARY KEY (idx, key, doc)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS query_entries_by_doc ON query_entries(doc);
        """

    /// The indexes the database has.
    static func load(from db: Connection) throws(StoreError) -> [Stored] {
        let select = try db.statement("SELECT id, ddoc, name, view FROM query_indexes ORDER BY ddoc, name")
        defer { select.reset() }
        var stored: [Stored] = []
        while try select.step() {
            let (ddoc, name) = (select.string(1), select.string(2))
            guard let view = try? JSON(parsing: select.string(3)),
                let index = QueryIndex.indexes(inDesignDocument: ddoc, body: ["language": "query", "views": .object(JSON.Object([(key: name, value: view)]))]).first
            else { throw .internal("stored index \(ddoc)/\(name) is corrupt") }
            stored.append(Stored(rowID: select.int64(0), index: index))
        }
        return stored
    }

    /// Replaces the entries of document `id` after a write made `body` its winning
    /// revision (`nil`: the winner is deleted, or the document is gone). A design
    /// document's indexes are brought in line with it first.
    /// A `new` document has no entries to replace.
    static func documentChanged(id: String, revision: String, body: [UInt8]?, new: Bool = false, in context: inout WriteContext) throws {
        if id.hasPrefix("_design/") {
            try designDocumentChanged(id: id, body: body, indexes: &context.queryIndexes, in: context.connection)
            return
        }
        guard !context.queryIndexes.isEmpty else { return }
        let db = context.connection
        if !new {
            let delete = try db.statement("DELETE FROM query_entries WHERE doc = ?")
            defer { delete.reset() }
            delete.bind(id, at: 1)
            try delete.run()
        }
        guard let body else { return }
        let document = try self.document(id: id, revision: revision, body: body)
        for stored in context.queryIndexes {
            try insert(stored, document: document, id: id, in: db)
        }
    }

    /// The document as a selector sees it: `_id`, `_rev` and the body's fields.
    static func document(id: String, revision: String, body: [UInt8]) throws -> JSON {
        guard case .object(let fields) = try JSON(parsing: body) else { throw StoreError.internal("stored body of \(id) is not an object") }
        var members: [(key: String, value: JSON)] = [("_id", .string(id)), ("_rev", .string(revision))]
        members.reserveCapacity(fields.count + 2)
        members.append(contentsOf: fields.members)
        return .object(JSON.Object(members))
    }

    private static func insert(_ stored: Stored, document: JSON, id: String, in db: Connection) throws {
        guard let key = stored.index.key(of: document) else { return }
        let insert = try db.statement("INSERT OR IGNORE INTO query_entries(idx, key, doc) VALUES (?, ?, ?)")
        defer { insert.reset() }
        insert.bind(stored.rowID, at: 1)
        insert.bind(key, at: 2)
        insert.bind(id, at: 3)
        try insert.run()
    }

    /// Drops the indexes design document `id` no longer defines and builds the ones it now does.
    private static func designDocumentChanged(id: String, body: [UInt8]?, indexes: inout [Stored], in db: Connection) throws {
        let defined = try body.map { body in QueryIndex.indexes(inDesignDocument: id, body: try JSON(parsing: body)) } ?? []
        var kept: [Stored] = []
        for stored in indexes {
            guard stored.index.designDocument == id else {
                kept.append(stored)
                continue
            }
            if let same = defined.first(where: { $0.name == stored.index.name && $0.sameEntries(as: stored.index) }) {
                let update = try db.statement("UPDATE query_indexes SET view = ? WHERE id = ?")
                defer { update.reset() }
                update.bind(same.view.serialized(), at: 1)
                update.bind(stored.rowID, at: 2)
                try update.run()
                kept.append(Stored(rowID: stored.rowID, index: same))
                continue
            }
            for sql: StaticString in ["DELETE FROM query_entries WHERE idx = ?", "DELETE FROM query_indexes WHERE id = ?"] {
                let delete = try db.statement(sql)
                defer { delete.reset() }
                delete.bind(stored.rowID, at: 1)
                try delete.run()
            }
        }
        for index in defined where !kept.contains(where: { $0.index.designDocument == id && $0.index.name == index.name }) {
            let insert = try db.statement("INSERT INTO query_indexes(ddoc, name, view) VALUES (?, ?, ?) RETURNING id")
            defer { insert.reset() }
            insert.bind(id, at: 1)
            insert.bind(index.name, at: 2)
            insert.bind(index.view.serialized(), at: 3)
            guard try insert.step() else { throw StoreError.internal("cannot store index \(id)/\(index.name)") }
            let stored = Stored(rowID: insert.int64(0), index: index)
            insert.reset()
            try build(stored, in: db)
            kept.append(stored)
        }
        indexes = kept
    }

    /// Adds every current document to a new index.
    private static func build(_ stored: Stored, in db: Connection) throws {
        let select = try db.statement("SELECT id, tree FROM docs WHERE deleted = 0 AND NOT (id >= '_design/' AND id < '_design0')")
        defer { select.reset() }
        while try select.step() {
            let id = select.string(0)
            let tree = try RevisionTree(decoding: select.blob(1))
            guard let winner = tree.winner, let body = winner.body else { continue }
            try insert(stored, document: try document(id: id, revision: winner.revision.description, body: body), id: id, in: db)
        }
    }

    /// Builds the indexes of every design document from scratch: for a database
    /// written before syncd kept indexes, whose design documents may define some.
    static func rebuildAll(in db: Connection) throws {
        let select = try db.statement("SELECT id, tree FROM docs WHERE id >= '_design/' AND id < '_design0'")
        var designs: [(String, [UInt8]?)] = []
        while try select.step() {
            let tree = try RevisionTree(decoding: select.blob(1))
            designs.append((select.string(0), tree.winner.flatMap { $0.deleted ? nil : $0.body }))
        }
        select.reset()
        var indexes = try load(from: db)
        for (id, body) in designs { try designDocumentChanged(id: id, body: body, indexes: &indexes, in: db) }
    }
}

import JSON

/// The entries of the database's JSON indexes, brought up to date from the
/// changes feed before a query reads them, as CouchDB updates its indexes.
///
/// Each index remembers the sequence it has read the documents up to. Writes do
/// not touch indexes; `_find` first has the writer catch every index up to the
/// last sequence (``catchUp(in:limit:)``, in transactions of at most `limit`
/// documents), then reads. Catching up many documents at once writes each page
/// of an index once per transaction, where maintaining the index in every
/// write's transaction rewrote a page per document and made bulk writes 5 to 12
/// times slower (`syncd-bench query`). A design document only defines or drops
/// an index; the first query builds it the same way.
///
/// An entry is `(index, key, document id)`: the key is the collation sort keys of
/// the document's indexed values, so SQLite's byte order of keys is CouchDB's
/// collation order and a range of the index is a range of rows. A query matches
/// every document it reads against the whole selector, so even an index behind
/// (`"update": false`) never makes it return a revision that is not current.
enum IndexEntries {
    /// An index with its row id in `query_indexes` and how far it has read.
    struct Stored: Sendable {
        let rowID: Int64
        let index: QueryIndex
        /// The last sequence whose document the index reflects.
        var sequence: UInt64
    }

    static let schema = """
        CREATE TABLE IF NOT EXISTS query_indexes (
            id INTEGER PRIMARY KEY,
            ddoc TEXT NOT NULL,
            name TEXT NOT NULL,
            view TEXT NOT NULL,
            seq INTEGER NOT NULL DEFAULT 0,
            UNIQUE (ddoc, name)
        ) STRICT;
        CREATE TABLE IF NOT EXISTS query_entries (
            idx INTEGER NOT NULL,
            key BLOB NOT NULL,
            doc TEXT NOT NULL,
            PRIMARY KEY (idx, key, doc)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS query_entries_by_doc ON query_entries(doc, idx);
        """

    /// The indexes the database has.
    static func load(from db: Connection) throws(StoreError) -> [Stored] {
        let select = try db.statement("SELECT id, ddoc, name, view, seq FROM query_indexes ORDER BY ddoc, name")
        defer { select.reset() }
        var stored: [Stored] = []
        while try select.step() {
            let (ddoc, name) = (select.string(1), select.string(2))
            guard let view = try? JSON(parsing: select.string(3)),
                let index = QueryIndex.indexes(inDesignDocument: ddoc, body: ["language": "query", "views": .object(JSON.Object([(key: name, value: view)]))]).first
            else { throw .internal("stored index \(ddoc)/\(name) is corrupt") }
            stored.append(Stored(rowID: select.int64(0), index: index, sequence: UInt64(clamping: select.int64(4))))
        }
        return stored
    }

    /// After a write makes `body` the winner of document `id` (`nil` when deleted or gone):
    /// a design document's indexes are defined anew from it, and a new or changed index
    /// starts empty, to be built by the next query. Other documents wait for catch-up.
    static func documentStored(id: String, body: [UInt8]?, in context: inout WriteContext) throws {
        guard id.hasPrefix("_design/") else { return }
        try designDocumentChanged(id: id, body: body, indexes: &context.queryIndexes, in: context.connection)
    }

    private static func designDocumentChanged(id: String, body: [UInt8]?, indexes: inout [Stored], in db: Connection) throws {
        let defined = try body.map { body in QueryIndex.indexes(inDesignDocument: id, body: try JSON(parsing: body)) } ?? []
        let definedByName = Dictionary(defined.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var kept: [Stored] = []
        for stored in indexes {
            guard stored.index.designDocument == id else {
                kept.append(stored)
                continue
            }
            if let same = definedByName[stored.index.name], same.sameEntries(as: stored.index) {
                let update = try db.statement("UPDATE query_indexes SET view = ? WHERE id = ?")
                defer { update.reset() }
                update.bind(same.view.serialized(), at: 1)
                update.bind(stored.rowID, at: 2)
                try update.run()
                kept.append(Stored(rowID: stored.rowID, index: same, sequence: stored.sequence))
                continue
            }
            for sql: StaticString in ["DELETE FROM query_entries WHERE idx = ?", "DELETE FROM query_indexes WHERE id = ?"] {
                let delete = try db.statement(sql)
                defer { delete.reset() }
                delete.bind(stored.rowID, at: 1)
                try delete.run()
            }
        }
        let keptNames = Set(kept.lazy.filter { $0.index.designDocument == id }.map(\.index.name))
        for index in defined where !keptNames.contains(index.name) {
            // A bound on what one design document, perhaps a peer's, makes every later catch-up do.
            guard kept.count < QueryIndex.maximumIndexes else { break }
            let insert = try db.statement("INSERT INTO query_indexes(ddoc, name, view, seq) VALUES (?, ?, ?, 0) RETURNING id")
            defer { insert.reset() }
            insert.bind(id, at: 1)
            insert.bind(index.name, at: 2)
            insert.bind(index.view.serialized(), at: 3)
            guard try insert.step() else { throw StoreError.internal("cannot store index \(id)/\(index.name)") }
            kept.append(Stored(rowID: insert.int64(0), index: index, sequence: 0))
        }
        indexes = kept
    }

    /// Removes a purged document's entries: its row is gone, so no catch-up would see it.
    static func forget(id: String, in context: inout WriteContext) throws {
        guard !context.queryIndexes.isEmpty else { return }
        let delete = try context.connection.statement("DELETE FROM query_entries WHERE doc = ?")
        defer { delete.reset() }
        delete.bind(id, at: 1)
        try delete.run()
    }

    /// Whether some index has not read up to `sequence`.
    static func areBehind(_ indexes: [Stored], _ sequence: UInt64) -> Bool {
        indexes.contains { $0.sequence < sequence }
    }

    /// Brings the indexes behind `target` (all of them, or only index `only`) forward
    /// by at most `limit` documents, in changes-feed order: each changed document's
    /// entries are replaced by those of its winning revision (none when deleted).
    /// Returns whether one of them is still behind `target`; what is written after
    /// `target` is left for the next query, so writers cannot keep a query waiting.
    static func catchUp(in context: inout WriteContext, upTo target: UInt64 = .max, only: Int64? = nil, limit: Int) throws -> Bool {
        let last = min(context.lastSequence, target)
        var behind = context.queryIndexes.filter { $0.sequence < last && (only == nil || $0.rowID == only) }
        guard let from = behind.map(\.sequence).min() else { return false }
        let db = context.connection
        let select = try db.statement("SELECT seq, id, deleted, tree FROM docs WHERE seq > ? ORDER BY seq LIMIT ?")
        defer { select.reset() }
        select.bind(from, at: 1)
        select.bind(limit, at: 2)
        let delete = try db.statement("DELETE FROM query_entries WHERE doc = ? AND idx = ?")
        defer { delete.reset() }
        // New entries are inserted in key order, a batch at a time: each page of an
        // index is then written once per batch, where documents in sequence order
        // put each entry on a page of their own, far from the last.
        var entries = EntryBatch()
        var read = 0
        var reached = from
        while try select.step() {
            read += 1
            let (sequence, id) = (UInt64(select.int64(0)), select.string(1))
            reached = sequence
            if id.hasPrefix("_design/") { continue }
            // The document as the selector sees it (its attachments' stubs included).
            var document: JSON?
            if select.int(2) == 0 {
                let row = DocumentRow(id: id, sequence: sequence, tree: try RevisionTree(decoding: select.blob(3)))
                if let winner = row.tree.winner, !winner.deleted { document = try row.revision(at: winner, history: false)?.json() }
            }
            for stored in behind where stored.sequence < sequence {
                if stored.sequence > 0 {  // an index built from nothing has no entries to replace
                    delete.reset()
                    delete.bind(id, at: 1)
                    delete.bind(stored.rowID, at: 2)
                    try delete.run()
                }
                guard let document, let key = stored.index.key(of: document) else { continue }
                entries.append(index: stored.rowID, key: key, document: id)
            }
            if entries.isFull { try entries.insert(into: db) }
        }
        try entries.insert(into: db)
        if read < limit || reached > last { reached = last }
        let update = try db.statement("UPDATE query_indexes SET seq = ? WHERE id = ?")
        defer { update.reset() }
        for position in behind.indices where behind[position].sequence < reached {
            update.reset()
            update.bind(reached, at: 1)
            update.bind(behind[position].rowID, at: 2)
            try update.run()
            behind[position].sequence = reached
        }
        context.queryIndexes = context.queryIndexes.map { stored in behind.first { $0.rowID == stored.rowID } ?? stored }
        return reached < last
    }

    /// Defines the indexes of every design document: for a database written
    /// before syncd kept indexes, whose design documents may define some.
    static func defineAll(in db: Connection) throws {
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

/// Index entries waiting to be inserted, in key order, once a catch-up has read
/// a batch of documents. A document appears once in a batch (its row has one
/// sequence), so its old entries are deleted before its new ones go in.
private struct EntryBatch {
    private struct Entry {
        let index: Int64
        let key: [UInt8]
        let document: String
    }

    private var entries: [Entry] = []
    private var bytes = 0
    /// A bound on the memory a batch holds, whatever the indexes' keys.
    private static let maximumBytes = 16 << 20

    var isFull: Bool { bytes >= Self.maximumBytes }

    mutating func append(index: Int64, key: [UInt8], document: String) {
        entries.append(Entry(index: index, key: key, document: document))
        bytes += key.count + document.utf8.count + 64
    }

    /// Inserts the entries in the order of the index's primary key and empties the batch.
    mutating func insert(into db: Connection) throws {
        guard !entries.isEmpty else { return }
        entries.sort { a, b in
            if a.index != b.index { return a.index < b.index }
            if a.key != b.key { return a.key.lexicographicallyPrecedes(b.key) }
            return a.document.utf8.lexicographicallyPrecedes(b.document.utf8)
        }
        let insert = try db.statement("INSERT OR IGNORE INTO query_entries(idx, key, doc) VALUES (?, ?, ?)")
        defer { insert.reset() }
        for entry in entries {
            insert.reset()
            insert.bind(entry.index, at: 1)
            insert.bind(entry.key, at: 2)
            insert.bind(entry.document, at: 3)
            try insert.run()
        }
        entries.removeAll(keepingCapacity: true)
        bytes = 0
    }
}

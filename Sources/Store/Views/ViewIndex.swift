import JSON

/// Where views' rows are kept: the index of each view group (a design document's views, by
/// signature) in SQLite, ordered as CouchDB orders a view.
///
/// A row is `(group, view, key, document id, n)`, where the key is the emitted key's
/// ``CollationSortKey``, so SQLite's byte order of the primary key is CouchDB's: by key in
/// collation order, then by document id, then in the order one document emitted equal keys.
/// The emitted key and value are kept as JSON text beside it. A group records the last
/// sequence it has mapped the database up to; writes never touch it, and a query (or
/// ``Database/updateView(design:)``) maps what changed since, as CouchDB updates its indexes.
enum ViewIndex {
    static let schema: String = """
        CREATE TABLE IF NOT EXISTS view_groups (
            id INTEGER PRIMARY KEY,
            ddoc TEXT NOT NULL,
            signature TEXT NOT NULL,
            seq INTEGER NOT NULL DEFAULT 0,
            UNIQUE (ddoc, signature)
        ) STRICT;
        CREATE TABLE IF NOT EXISTS view_rows (
            grp INTEGER NOT NULL,
            view INTEGER NOT NULL,
            key BLOB NOT NULL,
            doc TEXT NOT NULL,
            n INTEGER NOT NULL,
            json_key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (grp, view, key, doc, n)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS view_rows_by_doc ON view_rows(grp, doc);
        \(ViewBlocks.schema)
        """

    /// A group's row in `view_groups`: its id and how far it has mapped.
    struct Stored: Sendable {
        let rowID: Int64
        let sequence: UInt64
    }

    /// The stored group of `designID` with `signature`, if there is one.
    static func stored(_ designID: String, signature: String, in db: Connection) throws(StoreError) -> Stored? {
        let select = try db.statement("SELECT id, seq FROM view_groups WHERE ddoc = ? AND signature = ?")
        defer { select.reset() }
        select.bind(designID, at: 1)
        select.bind(signature, at: 2)
        guard try select.step() else { return nil }
        return Stored(rowID: select.int64(0), sequence: UInt64(clamping: select.int64(1)))
    }

    /// The stored group of `designID` with `signature`, made empty when there is none.
    static func make(_ designID: String, signature: String, in db: Connection) throws(StoreError) -> Stored {
        if let stored = try stored(designID, signature: signature, in: db) { return stored }
        let insert = try db.statement("INSERT INTO view_groups(ddoc, signature, seq) VALUES (?, ?, 0) RETURNING id")
        defer { insert.reset() }
        insert.bind(designID, at: 1)
        insert.bind(signature, at: 2)
        guard try insert.step() else { throw .internal("cannot store the views of \(designID)") }
        return Stored(rowID: insert.int64(0), sequence: 0)
    }

    /// After a write makes `body` the winner of design document `id` (`nil` when deleted):
    /// the indexes of its views as they were, which no query can ask for again, are dropped.
    static func documentStored(id: String, body: [UInt8]?, in context: inout WriteContext) throws {
        guard id.hasPrefix("_design/") else { return }
        let signature = try body.flatMap { body in
            ViewGroup(design: DesignDocument(id: id, revision: "", document: try JSON(parsing: body)))?.signature
        }
        try drop(design: id, except: signature, in: context.connection)
    }

    /// Drops the groups whose design document is gone or defines other views now (`_view_cleanup`).
    static func cleanUp(in db: Connection) throws {
        let select = try db.statement("SELECT DISTINCT ddoc FROM view_groups WHERE ddoc >= '_design/' AND ddoc < '_design0'")
        var designs: [String] = []
        while try select.step() { designs.append(select.string(0)) }
        select.reset()
        for id in designs {
            var signature: String?
            if let row = try DocumentRow.load(id: id, from: db), let winner = row.tree.winner, !winner.deleted, let body = winner.body {
                signature = ViewGroup(design: DesignDocument(id: id, revision: "", document: try JSON(parsing: body)))?.signature
            }
            try drop(design: id, except: signature, in: db)
        }
    }

    /// Drops the groups of `design` other than the one with `signature`.
    static func drop(design: String, except signature: String?, in db: Connection) throws(StoreError) {
        try drop(where: "ddoc = ? AND signature IS NOT ?", [design, signature], in: db)
    }

    private static func drop(where condition: String, _ values: [String?], in db: Connection) throws(StoreError) {
        let select = try db.statement(sql: "SELECT id FROM view_groups WHERE " + condition)
        for (place, value) in values.enumerated() { select.bind(value, at: Int32(place + 1)) }
        var groups: [Int64] = []
        while try select.step() { groups.append(select.int64(0)) }
        select.reset()
        for group in groups {
            for sql: StaticString in ["DELETE FROM view_rows WHERE grp = ?", "DELETE FROM view_blocks WHERE grp = ?", "DELETE FROM view_groups WHERE id = ?"] {
                let delete = try db.statement(sql)
                defer { delete.reset() }
                delete.bind(group, at: 1)
                try delete.run()
            }
        }
    }

    /// Removes a purged document's rows: its row is gone, so no update would see it.
    static func forget(id: String, in context: inout WriteContext) throws {
        let delete = try context.connection.statement("DELETE FROM view_rows WHERE grp IN (SELECT id FROM view_groups) AND doc = ? RETURNING grp, view, key, n")
        delete.bind(id, at: 1)
        var removed: [Int64: [ViewBlocks.Place]] = [:]
        while try delete.step() {
            removed[delete.int64(0), default: []].append(ViewBlocks.Place(view: delete.int(1), key: delete.blob(2), doc: id, n: delete.int(3)))
        }
        delete.reset()
        for (group, places) in removed { try ViewBlocks.adjust(group: group, added: [], removed: places, in: context.connection) }
    }

    /// One document's place in a batch mapped: its id and, when it is mapped (live, and not a
    /// design document unless the group maps those), what each view emitted for it.
    struct Mapped: Sendable {
        let id: String
        let rows: [[ViewEmission]]?
    }

    /// Writes what a batch of documents mapped to, if the group is still where the batch
    /// started (`from`): each document's rows are replaced, and the group has read up to
    /// `reached`. Returns false when the group was dropped or moved meanwhile.
    static func apply(_ batch: [Mapped], group: Int64, from: UInt64, reached: UInt64, in db: Connection) throws -> Bool {
        let check = try db.statement("SELECT seq FROM view_groups WHERE id = ?")
        check.bind(group, at: 1)
        guard try check.step(), UInt64(clamping: check.int64(0)) == from else {
            check.reset()
            return false
        }
        check.reset()
        var removed: [ViewBlocks.Place] = []
        if from > 0 {  // a group built from nothing has no rows to replace
            let delete = try db.statement("DELETE FROM view_rows WHERE grp = ? AND doc = ? RETURNING view, key, n")
            defer { delete.reset() }
            for document in batch {
                delete.reset()
                delete.bind(group, at: 1)
                delete.bind(document.id, at: 2)
                while try delete.step() {
                    removed.append(ViewBlocks.Place(view: delete.int(0), key: delete.blob(1), doc: document.id, n: delete.int(2)))
                }
            }
        }
        // Inserted in key order, so each page of the index is written once a batch.
        var rows: [(view: Int, key: [UInt8], doc: String, n: Int, emission: ViewEmission)] = []
        for document in batch {
            guard let perView = document.rows else { continue }
            for (view, emitted) in perView.enumerated() {
                for (n, emission) in emitted.enumerated() {
                    rows.append((view, CollationSortKey.of(emission.key), document.id, n, emission))
                }
            }
        }
        rows.sort { a, b in
            if a.view != b.view { return a.view < b.view }
            if a.key != b.key { return a.key.lexicographicallyPrecedes(b.key) }
            if a.doc != b.doc { return a.doc.utf8.lexicographicallyPrecedes(b.doc.utf8) }
            return a.n < b.n
        }
        let insert = try db.statement("INSERT INTO view_rows(grp, view, key, doc, n, json_key, value) VALUES (?, ?, ?, ?, ?, ?, ?)")
        defer { insert.reset() }
        for row in rows {
            insert.reset()
            insert.bind(group, at: 1)
            insert.bind(row.view, at: 2)
            insert.bind(row.key, at: 3)
            insert.bind(row.doc, at: 4)
            insert.bind(row.n, at: 5)
            insert.bind(row.emission.key.serialized(), at: 6)
            insert.bind(row.emission.value.serialized(), at: 7)
            try insert.run()
        }
        try ViewBlocks.adjust(group: group, added: rows.map { ViewBlocks.Place(view: $0.view, key: $0.key, doc: $0.doc, n: $0.n) },
                              removed: removed, in: db)
        let update = try db.statement("UPDATE view_groups SET seq = ? WHERE id = ?")
        defer { update.reset() }
        update.bind(reached, at: 1)
        update.bind(group, at: 2)
        try update.run()
        return true
    }
}

import JSON

/// How many rows a view holds before a place in it, without counting them all: rows are
/// split, in key order, into blocks of about ``size`` rows, each with its count, so CouchDB's
/// `total_rows` is a sum of block counts and `offset` a sum plus a count within one block,
/// whatever the size of the view (a million rows counted one by one took 50 ms a query).
///
/// A block is known by the place of its first row `(key, doc, n)`; every view has one starting
/// before any row, so every row is in the block with the greatest start not after it. Writes
/// of an index update adjust the counts; a block grown past twice ``size`` is split.
enum ViewBlocks {
    static let size = 1_024

    static let schema = """
        CREATE TABLE IF NOT EXISTS view_blocks (
            grp INTEGER NOT NULL,
            view INTEGER NOT NULL,
            key BLOB NOT NULL,
            doc TEXT NOT NULL,
            n INTEGER NOT NULL,
            rows INTEGER NOT NULL,
            PRIMARY KEY (grp, view, key, doc, n)
        ) STRICT, WITHOUT ROWID;
        """

    /// A place in a view: a row's, or a block's start.
    struct Place: Hashable {
        let view: Int
        let key: [UInt8]
        let doc: String
        let n: Int

        static func first(of view: Int) -> Place { Place(view: view, key: [], doc: "", n: -1) }

        static func < (a: Place, b: Place) -> Bool {
            if a.view != b.view { return a.view < b.view }
            if a.key != b.key { return a.key.lexicographicallyPrecedes(b.key) }
            if a.doc != b.doc { return a.doc.utf8.lexicographicallyPrecedes(b.doc.utf8) }
            return a.n < b.n
        }
    }

    /// Counts rows added (+1) and removed (−1) at `places` into their blocks, then splits the blocks grown too large.
    static func adjust(group: Int64, added: [Place], removed: [Place], in db: Connection) throws {
        var deltas: [Place: Int] = [:]
        for (places, delta) in [(added, 1), (removed, -1)] where !places.isEmpty {
            let sorted = places.sorted(by: <)
            var block: (start: Place, end: Place?)?
            for place in sorted {
                if let current = block, current.start.view == place.view, current.end.map({ place < $0 }) ?? true {} else {
                    block = try self.block(containing: place, group: group, in: db)
                }
                deltas[block!.start, default: 0] += delta
            }
        }
        let update = try db.statement("UPDATE view_blocks SET rows = rows + ? WHERE grp = ? AND view = ? AND key = ? AND doc = ? AND n = ? RETURNING rows")
        for (start, delta) in deltas where delta != 0 {
            update.reset()
            update.bind(delta, at: 1)
            bind(start, group: group, to: update, from: 2)
            guard try update.step() else { continue }
            let rows = update.int(0)
            update.reset()
            if rows > 2 * size { try split(start, group: group, in: db) }
        }
        update.reset()
    }

    /// The block `place` is in: its start, and the next block's start (`nil` for the last).
    private static func block(containing place: Place, group: Int64, in db: Connection) throws -> (start: Place, end: Place?) {
        let first = try db.statement("INSERT OR IGNORE INTO view_blocks(grp, view, key, doc, n, rows) VALUES (?, ?, ?, ?, ?, 0)")
        bind(.first(of: place.view), group: group, to: first, from: 1)
        try first.run()
        first.reset()
        let before = try db.statement("""
            SELECT key, doc, n FROM view_blocks WHERE grp = ? AND view = ? AND (key, doc, n) <= (?, ?, ?)
            ORDER BY key DESC, doc DESC, n DESC LIMIT 1
            """)
        defer { before.reset() }
        bind(place, group: group, to: before, from: 1)
        guard try before.step() else { throw StoreError.internal("a view has no first block") }
        let start = Place(view: place.view, key: before.blob(0), doc: before.string(1), n: before.int(2))
        before.reset()
        let after = try db.statement("""
            SELECT key, doc, n FROM view_blocks WHERE grp = ? AND view = ? AND (key, doc, n) > (?, ?, ?)
            ORDER BY key, doc, n LIMIT 1
            """)
        defer { after.reset() }
        bind(place, group: group, to: after, from: 1)
        let end = try after.step() ? Place(view: place.view, key: after.blob(0), doc: after.string(1), n: after.int(2)) : nil
        return (start, end)
    }

    /// Splits the block starting at `start` into blocks of ``size`` rows.
    private static func split(_ start: Place, group: Int64, in db: Connection) throws {
        let (_, end) = try block(containing: start, group: group, in: db)
        var sql = "SELECT key, doc, n FROM view_rows WHERE grp = ? AND view = ? AND (key, doc, n) >= (?, ?, ?)"
        if end != nil { sql += " AND (key, doc, n) < (?, ?, ?)" }
        let rows = try db.statement(sql: sql + " ORDER BY key, doc, n")
        bind(start, group: group, to: rows, from: 1)
        if let end {
            rows.bind(end.key, at: 6)
            rows.bind(end.doc, at: 7)
            rows.bind(end.n, at: 8)
        }
        var starts: [(Place, Int)] = [(start, 0)]
        while try rows.step() {
            if starts[starts.count - 1].1 == size {
                starts.append((Place(view: start.view, key: rows.blob(0), doc: rows.string(1), n: rows.int(2)), 0))
            }
            starts[starts.count - 1].1 += 1
        }
        rows.reset()
        let write = try db.statement("INSERT OR REPLACE INTO view_blocks(grp, view, key, doc, n, rows) VALUES (?, ?, ?, ?, ?, ?)")
        defer { write.reset() }
        for (place, count) in starts {
            write.reset()
            bind(place, group: group, to: write, from: 1)
            write.bind(count, at: 6)
            try write.run()
        }
    }

    private static func bind(_ place: Place, group: Int64, to statement: Statement, from index: Int32) {
        statement.bind(group, at: index)
        statement.bind(place.view, at: index + 1)
        statement.bind(place.key, at: index + 2)
        statement.bind(place.doc, at: index + 3)
        statement.bind(place.n, at: index + 4)
    }
}

import JSON

/// Reads one view's rows from a snapshot, as a query asks: its key ranges (one, or one per
/// key of `keys`) in CouchDB's order, forward or descending.
struct ViewScan {
    let group: Int64
    let view: Int
    let query: ViewQuery
    let db: Connection

    /// One end of a key range: a key's sort key and, among rows of that key, a document id.
    struct Bound {
        let key: [UInt8]
        let documentID: String?
        let inclusive: Bool
    }

    /// A range in ascending terms; rows are read descending when the query is.
    struct Range {
        let lower: Bound?
        let upper: Bound?
    }

    /// A row as stored.
    struct Row {
        let range: Int
        let sortKey: [UInt8]
        let id: String
        let n: Int
        let key: JSON
        let value: JSON
    }

    /// Where a paged read goes on: after this row of this range.
    struct Cursor: Sendable {
        let range: Int
        let key: [UInt8]
        let id: String
        let n: Int
    }

    /// The ranges the query reads, in the order it reads them.
    var ranges: [Range] {
        if let keys = query.keys {
            let ordered = query.descending ? keys.reversed() : keys
            return ordered.map { key in
                let bound = Bound(key: CollationSortKey.of(key), documentID: nil, inclusive: true)
                return Range(lower: bound, upper: bound)
            }
        }
        let start = query.startKey.map { Bound(key: CollationSortKey.of($0), documentID: query.startKeyDocumentID, inclusive: true) }
        let end = query.endKey.map { Bound(key: CollationSortKey.of($0), documentID: query.endKeyDocumentID, inclusive: query.inclusiveEnd) }
        return [query.descending ? Range(lower: end, upper: start) : Range(lower: start, upper: end)]
    }

    private enum Binding {
        case blob([UInt8]), text(String), integer(Int64)
    }

    /// The SQL condition of `range` (and of rows past `cursor`), with what it binds.
    private func condition(_ range: Range, after cursor: Cursor? = nil) -> (String, [Binding]) {
        var sql = "grp = ? AND view = ?"
        var bindings: [Binding] = [.integer(group), .integer(Int64(view))]
        func add(_ bound: Bound, _ comparison: String, _ strict: String) {
            if let id = bound.documentID {
                sql += " AND (key, doc) \(bound.inclusive ? comparison : strict) (?, ?)"
                bindings += [.blob(bound.key), .text(id)]
            } else {
                sql += " AND key \(bound.inclusive ? comparison : strict) ?"
                bindings.append(.blob(bound.key))
            }
        }
        if let lower = range.lower { add(lower, ">=", ">") }
        if let upper = range.upper { add(upper, "<=", "<") }
        if let cursor {
            sql += " AND (key, doc, n) \(query.descending ? "<" : ">") (?, ?, ?)"
            bindings += [.blob(cursor.key), .text(cursor.id), .integer(Int64(cursor.n))]
        }
        return (sql, bindings)
    }

    private func statement(_ sql: String, _ bindings: [Binding]) throws(StoreError) -> Statement {
        let statement = try db.statement(sql: sql)
        for (place, binding) in bindings.enumerated() {
            let index = Int32(place + 1)
            switch binding {
            case .blob(let bytes): statement.bind(bytes, at: index)
            case .text(let text): statement.bind(text, at: index)
            case .integer(let number): statement.bind(number, at: index)
            }
        }
        return statement
    }

    private var order: String { query.descending ? " ORDER BY key DESC, doc DESC, n DESC" : " ORDER BY key, doc, n" }

    /// Rows of `range` (past `cursor`), at most `limit` after skipping `skip`.
    private func rows(of range: Int, after cursor: Cursor? = nil, skip: Int = 0, limit: Int) throws -> [Row] {
        guard limit > 0 else { return [] }
        let (sql, bindings) = condition(ranges[range], after: cursor)
        let select = try statement("SELECT key, doc, n, json_key, value FROM view_rows WHERE " + sql + order + " LIMIT ? OFFSET ?", bindings)
        defer { select.reset() }
        select.bind(Int64(min(limit, Int(Int32.max))), at: Int32(bindings.count + 1))
        select.bind(Int64(skip), at: Int32(bindings.count + 2))
        var rows: [Row] = []
        while try select.step() {
            if ScanStop.shouldStop { throw StoreError.cancelled }
            rows.append(Row(range: range, sortKey: select.blob(0), id: select.string(1), n: select.int(2),
                            key: try JSON(parsing: select.blob(3)), value: try JSON(parsing: select.blob(4))))
        }
        return rows
    }

    private func count(_ sql: String, _ bindings: [Binding]) throws -> Int {
        let select = try statement("SELECT count(*) FROM view_rows WHERE " + sql, bindings)
        defer { select.reset() }
        return try select.step() ? select.int(0) : 0
    }

    /// How many rows satisfy `condition`, a condition that rows satisfy from the view's first
    /// up to some place: whole blocks' counts, and a count within the last block (``ViewBlocks``).
    private func rank(_ condition: (String, [Binding])) throws -> Int {
        let (sql, bindings) = condition
        let last = try statement("SELECT key, doc, n FROM view_blocks WHERE " + sql + " ORDER BY key DESC, doc DESC, n DESC LIMIT 1", bindings)
        guard try last.step() else {
            last.reset()
            return try count(sql, bindings)
        }
        let start: [Binding] = [.blob(last.blob(0)), .text(last.string(1)), .integer(last.int64(2))]
        last.reset()
        let blocks = try statement("SELECT coalesce(sum(rows), 0) FROM view_blocks WHERE grp = ? AND view = ? AND (key, doc, n) < (?, ?, ?)",
                                   [.integer(group), .integer(Int64(view))] + start)
        defer { blocks.reset() }
        let whole = try blocks.step() ? blocks.int(0) : 0
        return whole + (try count(sql + " AND (key, doc, n) >= (?, ?, ?)", bindings + start))
    }

    /// The sequence the group has read up to.
    private func sequence() throws -> UInt64 {
        let select = try db.statement("SELECT seq FROM view_groups WHERE id = ?")
        defer { select.reset() }
        select.bind(group, at: 1)
        return try select.step() ? UInt64(clamping: select.int64(0)) : 0
    }

    /// A map query's answer: rows after `skip`, at most `limit`, with `total_rows` and `offset`
    /// (the rows before the first returned, in the order read) and, when asked, documents.
    func mappedRows() throws -> ViewResult {
        let total = try rank(("grp = ? AND view = ?", [.integer(group), .integer(Int64(view))]))
        var rows: [Row] = []
        var skip = query.skip
        var left = query.limit ?? .max
        for range in ranges.indices where left > 0 {
            let read = try self.rows(of: range, skip: skip, limit: left)
            if skip > 0 {
                let (sql, bindings) = condition(ranges[range])
                skip = read.isEmpty ? max(0, skip - (try count(sql, bindings))) : 0
            }
            rows += read
            left -= read.count
        }
        // CouchDB's offset: the rows before the first returned in the order read, or, with none
        // returned, before where the read stopped (the last range's end).
        // CouchDB's offset: the rows before the first returned in the order read, or, with none
        // returned, where the read stopped: the range's first row when `limit` is 0, else its end.
        let offset: Int
        let before = { (bound: Bound) throws -> Int in  // rows before `bound` in ascending order (a lower bound's first row)
            try rank(condition(Range(lower: nil, upper: Bound(key: bound.key, documentID: bound.documentID, inclusive: !bound.inclusive))))
        }
        let through = { (bound: Bound) throws -> Int in try rank(condition(Range(lower: nil, upper: bound))) }  // rows up to an upper bound
        if let first = rows.first {
            let place: (String, [Binding]) = ("grp = ? AND view = ? AND (key, doc, n) \(query.descending ? "<=" : "<") (?, ?, ?)",
                                              [.integer(group), .integer(Int64(view)), .blob(first.sortKey), .text(first.id), .integer(Int64(first.n))])
            offset = query.descending ? total - (try rank(place)) : try rank(place)
        } else if query.limit == 0, let first = ranges.first {
            let rowsBefore = query.descending ? (try first.upper.map { total - (try through($0)) } ?? 0) : (try first.lower.map(before) ?? 0)
            offset = min(total, rowsBefore + query.skip)
        } else if let last = ranges.last {
            offset = query.descending ? (try last.lower.map { total - (try before($0)) } ?? total) : (try last.upper.map(through) ?? total)
        } else {
            offset = total
        }
        var bytes = 0
        var answered: [ViewRow] = []
        answered.reserveCapacity(rows.count)
        for row in rows {
            var document: JSON?
            if query.includeDocuments { document = try self.document(for: row) }
            let answer = ViewRow(id: row.id, key: row.key, value: row.value, document: document)
            bytes += answer.json.serializedBytes().count
            if bytes > Database.maximumViewResultBytes {
                throw StoreError(.tooLarge, error: "too_large",
                                 reason: "The rows asked for pass \(Database.maximumViewResultBytes >> 20) MiB; ask for fewer (limit) and page with startkey and startkey_docid.")
            }
            answered.append(answer)
        }
        return ViewResult(totalRows: total, offset: offset, rows: answered, updateSequence: try sequence())
    }

    /// The document `include_docs` gives a row: the one its value names by `_id` (and
    /// `_rev`), else the one that emitted it; `null` when that is gone.
    private func document(for row: Row) throws -> JSON {
        var id = row.id
        var revision: RevisionID?
        if case .string(let linked)? = row.value["_id"] {
            id = linked
            revision = row.value["_rev"]?.stringValue.flatMap(RevisionID.init)
        }
        guard let stored = try DocumentRow.load(id: id, from: db) else { return .null }
        let node = revision.flatMap { stored.tree.node($0) } ?? (revision == nil ? stored.tree.winner : nil)
        guard let node, !node.deleted || revision != nil,
            let found = try stored.revision(at: node, in: db, history: query.conflicts)
        else { return .null }
        return found.json(query.conflicts ? [.conflicts] : [])
    }

    /// Up to `size` rows of the query's ranges in order, past `cursor`; the cursor to go on
    /// from, `nil` once every range is read.
    func page(after cursor: Cursor?, size: Int) throws -> (rows: [Row], next: Cursor?, sequence: UInt64) {
        var rows: [Row] = []
        var range = cursor?.range ?? 0
        var after = cursor
        while range < ranges.count, rows.count < size {
            let read = try self.rows(of: range, after: after, limit: size - rows.count)
            rows += read
            if rows.count < size {
                range += 1
                after = nil
            }
        }
        let next = range < ranges.count ? rows.last.map { Cursor(range: $0.range, key: $0.sortKey, id: $0.id, n: $0.n) } : nil
        return (rows, next, try sequence())
    }
}

/// What to list from `_all_docs`.
public struct AllDocsOptions: Sendable {
    /// The first id (inclusive), or the last when descending.
    public var startKey: String?
    /// The last id, or the first when descending.
    public var endKey: String?
    /// Whether `endKey` itself is listed.
    public var inclusiveEnd = true
    /// At most this many rows.
    public var limit: Int?
    /// Rows to skip first.
    public var skip = 0
    /// Highest id first.
    public var descending = false
    /// Only these ids, in this order; unknown ids get an error row, deleted ones a deleted row.
    public var keys: [String]?
    /// Include each current revision's document.
    public var includeDocuments = false
    /// Count the rows before `startKey` for `offset` (a scan); a caller
    /// paging through a listing needs it for the first page only.
    public var countsOffset = true

    /// Every live document, in id order.
    public init() {}
}

/// One row of `_all_docs`.
public struct AllDocsRow: Sendable, Hashable {
    /// The document id (the row's key).
    public let id: String
    /// The winning revision; `nil` for an unknown id in a `keys` listing.
    public let revision: RevisionID?
    /// Whether the document is deleted (only listed when asked for by key).
    public let deleted: Bool
    /// The current revision, when asked for.
    public let document: DocumentRevision?
}

/// A page of `_all_docs`.
public struct AllDocsPage: Sendable {
    /// Live documents in the database.
    public let totalRows: Int
    /// Rows before the first listed one (CouchDB's `offset`).
    public let offset: Int
    /// The rows.
    public let rows: [AllDocsRow]
    /// The database's last sequence when the listing was read.
    public let updateSequence: UInt64
}

extension Database {
    /// Lists documents by id in byte order of their ids (CouchDB's raw collation for `_all_docs`).
    public func allDocs(_ options: AllDocsOptions) throws(StoreError) -> AllDocsPage {
        try read { db in
            let meta = try db.statement("SELECT key, value FROM meta WHERE key IN ('doc_count', 'last_seq')")
            var counts: [String: Int64] = [:]
            while try meta.step() { counts[meta.string(0)] = meta.int64(1) }
            let total = Int(counts["doc_count"] ?? 0)
            var rows: [AllDocsRow] = []

            func makeRow(id: String, winner: String, deleted: Bool, tree: [UInt8]?) throws -> AllDocsRow {
                var document: DocumentRevision?
                if options.includeDocuments, !deleted, let tree {
                    let row = DocumentRow(id: id, sequence: 0, tree: try RevisionTree(decoding: tree))
                    document = try row.tree.winner.flatMap { try row.revision(at: $0) }
                }
                return AllDocsRow(id: id, revision: RevisionID(winner), deleted: deleted, document: document)
            }

            let columns = options.includeDocuments ? "id, winner, deleted, tree" : "id, winner, deleted"
            if let keys = options.keys {
                let select = try db.statement(sql: "SELECT \(columns) FROM docs WHERE id = ?")
                let ordered = options.descending ? keys.reversed() : keys
                for key in ordered.dropFirst(options.skip).prefix(options.limit ?? Int.max) {
                    select.reset()
                    select.bind(key, at: 1)
                    if try select.step() {
                        rows.append(try makeRow(id: key, winner: select.string(1), deleted: select.int(2) != 0,
                                                tree: options.includeDocuments ? select.blob(3) : nil))
                    } else {
                        rows.append(AllDocsRow(id: key, revision: nil, deleted: false, document: nil))
                    }
                }
                return AllDocsPage(totalRows: total, offset: 0, rows: rows, updateSequence: UInt64(counts["last_seq"] ?? 0))
            }

            var conditions = ["deleted = 0"]
            var bindings: [String] = []
            let (lowerOp, upperOp) = (">=", options.inclusiveEnd ? "<=" : "<")
            if let start = options.startKey {
                conditions.append(options.descending ? "id <= ?" : "id \(lowerOp) ?")
                bindings.append(start)
            }
            if let end = options.endKey {
                conditions.append(options.descending ? (options.inclusiveEnd ? "id >= ?" : "id > ?") : "id \(upperOp) ?")
                bindings.append(end)
            }
            let whereClause = conditions.joined(separator: " AND ")
            let select = try db.statement(
                sql: "SELECT \(columns) FROM docs WHERE \(whereClause) ORDER BY id \(options.descending ? "DESC" : "ASC") LIMIT ? OFFSET ?")
            for (index, value) in bindings.enumerated() { select.bind(value, at: Int32(index + 1)) }
            select.bind(Int64(min(options.limit ?? Int(Int32.max), Int(Int32.max))), at: Int32(bindings.count + 1))
            select.bind(Int64(options.skip), at: Int32(bindings.count + 2))
            while try select.step() {
                rows.append(try makeRow(id: select.string(0), winner: select.string(1), deleted: false,
                                        tree: options.includeDocuments ? select.blob(3) : nil))
            }
            select.reset()

            var offset = options.skip
            if let start = options.startKey, options.countsOffset {
                let count = try db.statement(
                    sql: "SELECT count(*) FROM docs WHERE deleted = 0 AND id \(options.descending ? ">" : "<") ?")
                count.bind(start, at: 1)
                if try count.step() { offset += count.int(0) }
            }
            return AllDocsPage(totalRows: total, offset: offset, rows: rows, updateSequence: UInt64(counts["last_seq"] ?? 0))
        }
    }
}

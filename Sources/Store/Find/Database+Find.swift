import JSON

/// The answer to a Mango query.
public struct FindResult: Sendable {
    /// What a query cost, CouchDB's `execution_stats`.
    public struct Statistics: Sendable, Hashable {
        /// Index entries (or `_all_docs` rows) read.
        public var keysExamined = 0
        /// Documents read and matched against the selector.
        public var documentsExamined = 0
        /// Documents returned.
        public var resultsReturned = 0
        /// Time spent answering.
        public var executionTime: Duration = .zero
    }

    /// The documents, in answer order.
    public let documents: [JSON]
    /// Where this page ended; pass it back for the next one.
    public let bookmark: String
    /// Why the query was slower than it could be, as CouchDB words it.
    public let warning: String?
    /// What the query cost.
    public let statistics: Statistics

    /// CouchDB's response body: `docs`, `bookmark`, `warning` and, when asked, `execution_stats`.
    public func json(executionStats: Bool) -> JSON {
        var body: JSON.Object = ["docs": .array(documents), "bookmark": .string(bookmark)]
        if executionStats {
            body["execution_stats"] = [
                "total_keys_examined": .number(Double(statistics.keysExamined)),
                "total_docs_examined": .number(Double(statistics.documentsExamined)),
                "total_quorum_docs_examined": 0,
                "results_returned": .number(Double(statistics.resultsReturned)),
                "execution_time_ms": .number(Double(statistics.executionTime.components.attoseconds) / 1e15
                    + Double(statistics.executionTime.components.seconds) * 1000),
            ]
        }
        if let warning { body["warning"] = .string(warning) }
        return .object(body)
    }
}

extension Database {
    /// The most bytes of documents one `_find` answer holds: a bound on a query's
    /// memory whatever the database holds and whatever `limit` asks for.
    public static let maximumFindResultBytes = 64 << 20

    /// Documents examined per result past which `_find` warns, as CouchDB's
    /// `mango.index_scan_warning_threshold` does by default.
    static let scanWarningRatio = 10
    static let scanWarning = "The number of documents examined is high in proportion to the number of results returned. Consider adding a more specific index to improve this."

    /// Answers a Mango query: brings the indexes up to date (unless the query says
    /// not to), then reads one snapshot, the range of the best index for the query
    /// (``QueryPlan``), matching each document read against the whole selector.
    /// Stops early, with ``StoreError/cancelled``, when the asking task is cancelled.
    ///
    /// - Throws: the plan's `no_usable_index` (400); 413 `too_large` when the
    ///   documents asked for pass ``maximumFindResultBytes``.
    public func find(_ query: FindQuery) async throws(StoreError) -> FindResult {
        // One snapshot both tells whether the chosen index is behind and, when not, answers.
        // Both reads run on a scan thread: a query may pass over the whole database.
        switch try await ScanThreads.run({ () throws(StoreError) in try self.read { db in try Self.find(query, current: query.update, in: db) } }) {
        case .answer(let result):
            return result
        case .behind(let index, let sequence):
            // Up to the sequence seen, not beyond: writes that come meanwhile cannot keep the query waiting.
            try await updateIndexes(only: index, upTo: sequence)
            guard case .answer(let result) = try await ScanThreads.run({ () throws(StoreError) in
                try self.read { db in try Self.find(query, current: false, in: db) }
            }) else {
                throw .internal("a query found its index behind after catching it up")
            }
            return result
        }
    }

    private enum FindOutcome: Sendable {
        case answer(FindResult)
        /// The index the query reads has not read the documents up to `sequence`.
        case behind(index: Int64, sequence: UInt64)
    }

    /// The answer from `db`'s snapshot, unless the index chosen must be `current` and is behind.
    private static func find(_ query: FindQuery, current: Bool, in db: Connection) throws -> FindOutcome {
        let started = ContinuousClock.now
        let indexes = try IndexEntries.load(from: db)
        let plan = try QueryPlan(query, indexes: indexes)
        if current, case .index(let stored, _, _) = plan.source {
            let last = try lastSequence(in: db)
            if stored.sequence < last { return .behind(index: stored.rowID, sequence: last) }
        }
        var scan = FindScan(query: query, db: db)
        switch plan.source {
        case .allDocs(let lower, let upper):
            try scan.allDocs(lower: lower, upper: upper, descending: plan.descending)
        case .index(let stored, let lower, let upper):
            try scan.index(stored.rowID, lower: lower, upper: upper, descending: plan.descending)
        case .nothing: break
        }
        scan.statistics.resultsReturned = scan.documents.count
        scan.statistics.executionTime = ContinuousClock.now - started
        var warnings = plan.warnings
        if scan.statistics.documentsExamined > scanWarningRatio * max(1, scan.statistics.resultsReturned) {
            warnings.append(scanWarning)
        }
        return .answer(FindResult(documents: scan.documents, bookmark: scan.last?.text ?? query.bookmark?.text ?? "nil",
                                   warning: warnings.isEmpty ? nil : warnings.joined(separator: "\n"),
                                   statistics: scan.statistics))
    }

    static func lastSequence(in db: Connection) throws(StoreError) -> UInt64 {
        let meta = try db.statement("SELECT value FROM meta WHERE key = 'last_seq'")
        defer { meta.reset() }
        return try meta.step() ? UInt64(clamping: meta.int64(0)) : 0
    }

    /// What `find` would do, CouchDB's `_explain` body: the index chosen, the range read, the options.
    public func explain(_ query: FindQuery) throws(StoreError) -> JSON {
        try read { db in
            let plan = try QueryPlan(query, indexes: try IndexEntries.load(from: db))
            let index: JSON
            var range: JSON.Object = ["direction": .string(plan.descending ? "rev" : "fwd")]
            switch plan.source {
            case .allDocs(let lower, let upper):
                index = Self.allDocsIndex
                range["start_key"] = lower.map { .string($0.0) } ?? nil
                range["end_key"] = upper.map { .string($0.0) } ?? "<MAX>"
            case .nothing:
                index = nil
            case .index(let stored, let lower, let upper):
                index = Self.describe(stored.index)
                range["start_key"] = lower.map { .string(Hex.string($0)) } ?? nil
                range["end_key"] = upper.map { .string(Hex.string($0)) } ?? "<MAX>"
            }
            let fields: JSON = query.fields.map { .array($0.map(JSON.string)) } ?? "all_fields"
            let opts: JSON.Object = [
                "use_index": .array(query.useIndex.map { [.string($0.designDocument)] + ($0.name.map { [.string($0)] } ?? []) } ?? []),
                "bookmark": .string(query.bookmark?.text ?? "nil"),
                "limit": .number(Double(query.limit)), "skip": .number(Double(query.skip)),
                "sort": .object(JSON.Object(query.sort.map { ($0.name, .string(query.descending ? "desc" : "asc")) })),
                "fields": fields, "conflicts": .bool(query.conflicts), "execution_stats": .bool(query.executionStats),
                "allow_fallback": .bool(query.allowFallback), "r": 1,
            ]
            return [
                "dbname": .string(name), "index": index, "partitioned": false, "selector": query.selector.json,
                "opts": .object(opts), "limit": .number(Double(query.limit)), "skip": .number(Double(query.skip)), "fields": fields,
                "range": .object(range), "covering": false,
            ]
        }
    }

    /// Brings every index (or only index `only`) up to the last sequence as it is now
    /// (or `target`), in writer transactions of at most ``indexBatch`` documents;
    /// nothing to do costs one read.
    public func updateIndexes() async throws(StoreError) {
        try await updateIndexes(only: nil, upTo: nil)
    }

    private func updateIndexes(only: Int64?, upTo target: UInt64?) async throws(StoreError) {
        let (behind, last) = try read { db in
            let last = try Self.lastSequence(in: db)
            let indexes = try IndexEntries.load(from: db).filter { only == nil || $0.rowID == only }
            return (IndexEntries.areBehind(indexes, min(last, target ?? last)), min(last, target ?? last))
        }
        guard behind else { return }
        while try await write({ context in try IndexEntries.catchUp(in: &context, upTo: last, only: only, limit: Self.indexBatch) }) {
            if Task.isCancelled { throw .cancelled }
        }
    }

    /// The most documents one transaction of ``updateIndexes()`` reads: it holds up
    /// other writes for about as long as a bulk write of as many documents.
    static let indexBatch = 20_000

    /// The database's indexes as `GET /{db}/_index` lists them, `_all_docs` first.
    public func queryIndexes() throws(StoreError) -> [JSON] {
        let stored = try read { db in try IndexEntries.load(from: db) }
        return [Self.allDocsIndex] + stored.map { Self.describe($0.index) }
    }

    /// The built-in index every database has, as CouchDB lists it.
    private static let allDocsIndex: JSON = ["ddoc": nil, "name": "_all_docs", "type": "special", "def": ["fields": [["_id": "asc"]]]]

    private static func describe(_ index: QueryIndex) -> JSON {
        ["ddoc": .string(index.designDocument), "name": .string(index.name), "type": "json", "partitioned": false, "def": index.definition]
    }

    /// Whether `createIndex` made the index or found it there.
    public enum IndexCreation: Sendable, Hashable {
        case created, exists
    }

    /// Creates a JSON index from the body of `POST /{db}/_index` by writing its
    /// design document (adding a view to one that exists); the first query that
    /// reads it builds it. Returns the design document id, the name, and whether it
    /// was already there.
    @discardableResult
    public func createIndex(_ definition: JSON) async throws(StoreError) -> (IndexCreation, designDocument: String, name: String) {
        let index = try QueryIndex.parse(creation: definition)
        while true {
            let current = try? document(id: index.designDocument)
            var body: JSON.Object = current.map { $0.body } ?? [:]
            if current != nil, body["language"]?.stringValue != "query" {
                throw invalidIndex("\(index.designDocument) is a design document of another language; name another `ddoc`.")
            }
            var views = body["views"]?.objectValue ?? [:]
            if let existing = QueryIndex.indexes(inDesignDocument: index.designDocument, body: .object(body)).first(where: { $0.name == index.name }),
                existing.sameEntries(as: index)
            {
                return (.exists, index.designDocument, index.name)
            }
            views[index.name] = index.view
            body["language"] = "query"
            body["views"] = .object(views)
            var members: [(key: String, value: JSON)] = [("_id", .string(index.designDocument))]
            if let current { members.append(("_rev", .string(current.revision.description))) }
            members += body.members.filter { $0.key != "_id" && $0.key != "_rev" }
            do {
                try await put(.object(JSON.Object(members)))
                return (.created, index.designDocument, index.name)
            } catch where error.kind == .conflict {
                continue  // written meanwhile: read it again
            }
        }
    }

    /// Deletes index `name` from its design document (the whole document when it was the last).
    public func deleteIndex(designDocument: String, name: String) async throws(StoreError) {
        let id = QueryIndex.designDocumentID(designDocument)
        while true {
            guard let current = try? document(id: id),
                QueryIndex.indexes(inDesignDocument: id, body: .object(current.body)).contains(where: { $0.name == name })
            else { throw StoreError.notFound() }
            var body = current.body
            let views = JSON.Object((body["views"]?.objectValue ?? [:]).members.filter { $0.key != name })
            body = JSON.Object(body.members.filter { $0.key != "views" } + (views.isEmpty ? [] : [("views", .object(views))]))
            var members: [(key: String, value: JSON)] = [("_id", .string(id)), ("_rev", .string(current.revision.description))]
            // As CouchDB: a design document left holding nothing but its language goes.
            if body == ["language": "query"] { members.append(("_deleted", true)) } else { members += body.members }
            do {
                try await put(.object(JSON.Object(members)))
                return
            } catch where error.kind == .conflict {
                continue
            }
        }
    }
}

/// One `_find`'s pass over an index range or `_all_docs`: reads each document,
/// matches it, skips, collects up to the limit, and counts.
private struct FindScan {
    let query: FindQuery
    let db: Connection
    var documents: [JSON] = []
    var statistics = FindResult.Statistics()
    var last: Bookmark?
    private var skipped = 0
    private var bytes = 0

    init(query: FindQuery, db: Connection) {
        self.query = query
        self.db = db
    }

    var isFull: Bool { documents.count >= query.limit }

    mutating func index(_ rowID: Int64, lower: [UInt8]?, upper: [UInt8]?, descending: Bool) throws {
        guard query.limit > 0 else { return }
        // Each entry with its document in one step; CROSS JOIN keeps the index range as the outer loop.
        var sql = "SELECT e.key, e.doc, d.tree FROM query_entries e CROSS JOIN docs d ON d.id = e.doc WHERE e.idx = ?"
        var bindings: [[UInt8]] = []
        if let lower { sql += " AND e.key >= ?"; bindings.append(lower) }
        if let upper { sql += " AND e.key < ?"; bindings.append(upper) }
        if query.bookmark != nil { sql += descending ? " AND (e.key, e.doc) < (?, ?)" : " AND (e.key, e.doc) > (?, ?)" }
        sql += descending ? " ORDER BY e.key DESC, e.doc DESC" : " ORDER BY e.key, e.doc"
        let select = try db.statement(sql: sql)
        defer { select.reset() }
        select.bind(rowID, at: 1)
        for (offset, value) in bindings.enumerated() { select.bind(value, at: Int32(offset + 2)) }
        if let bookmark = query.bookmark {
            select.bind(bookmark.key, at: Int32(bindings.count + 2))
            select.bind(bookmark.id, at: Int32(bindings.count + 3))
        }
        while !isFull, try select.step() {
            try consider(id: select.string(1), key: select.blob(0), tree: select.blob(2))
        }
    }

    mutating func allDocs(lower: (String, inclusive: Bool)?, upper: (String, inclusive: Bool)?, descending: Bool) throws {
        guard query.limit > 0 else { return }
        // Design documents are not application documents: `_find` never returns them.
        var sql = "SELECT id, tree FROM docs WHERE deleted = 0 AND NOT (id >= '_design/' AND id < '_design0')"
        var bindings: [String] = []
        if let lower { sql += lower.inclusive ? " AND id >= ?" : " AND id > ?"; bindings.append(lower.0) }
        if let upper { sql += upper.inclusive ? " AND id <= ?" : " AND id < ?"; bindings.append(upper.0) }
        if let bookmark = query.bookmark { sql += descending ? " AND id < ?" : " AND id > ?"; bindings.append(bookmark.id) }
        sql += descending ? " ORDER BY id DESC" : " ORDER BY id"
        let select = try db.statement(sql: sql)
        defer { select.reset() }
        for (offset, value) in bindings.enumerated() { select.bind(value, at: Int32(offset + 1)) }
        while !isFull, try select.step() {
            try consider(id: select.string(0), key: [], tree: select.blob(1))
        }
    }

    /// Reads, matches and maybe keeps one document. The bookmark moves past every
    /// entry read, as CouchDB's does, so a page that found nothing still advances.
    private mutating func consider(id: String, key: [UInt8], tree: [UInt8]) throws {
        statistics.keysExamined += 1
        // Checked per entry: one document's `$regex` alone may take a good part of a second.
        if ScanStop.shouldStop { throw StoreError.cancelled }
        last = Bookmark(key: key, id: id)
        let row = DocumentRow(id: id, sequence: 0, tree: try RevisionTree(decoding: tree))
        guard let winner = row.tree.winner, !winner.deleted,
            let revision = try row.revision(at: winner, history: query.conflicts)
        else { return }
        statistics.documentsExamined += 1
        let document = revision.json(query.conflicts ? [.conflicts] : [])
        guard query.selector.matches(document) else { return }
        if skipped < query.skip {
            skipped += 1
            return
        }
        let answer = query.fieldPaths.map { Self.project(document, $0) } ?? document
        bytes += answer.serializedBytes().count
        if bytes > Database.maximumFindResultBytes {
            throw StoreError(.tooLarge, error: "too_large",
                             reason: "The documents asked for pass \(Database.maximumFindResultBytes >> 20) MiB; ask for fewer (limit) and page with the bookmark.")
        }
        documents.append(answer)
    }

    /// Only the fields at `paths` of `document`, a dotted field becoming nested objects; missing fields are left out.
    static func project(_ document: JSON, _ paths: [FieldPath]) -> JSON {
        var result = JSON.Object()
        for path in paths {
            guard case .found(let value) = path.lookup(in: document) else { continue }
            set(value, at: path.steps[...], in: &result)
        }
        return .object(result)
    }

    private static func set(_ value: JSON, at steps: ArraySlice<String>, in object: inout JSON.Object) {
        guard let first = steps.first else { return }
        if steps.count == 1 {
            object[first] = value
            return
        }
        var inner = object[first]?.objectValue ?? JSON.Object()
        set(value, at: steps.dropFirst(), in: &inner)
        object[first] = .object(inner)
    }
}

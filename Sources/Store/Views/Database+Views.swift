import JSON
import Locking

extension Database {
    /// The most bytes of rows (and documents) one view answer holds: a bound on a query's memory
    /// whatever the view holds and whatever `limit` asks for.
    public static let maximumViewResultBytes = 64 << 20

    /// The most documents, and bytes of documents, one step of an index update maps: what the
    /// query servers and the writer are given at once.
    static let viewBatch = (documents: 2_000, bytes: 16 << 20)

    /// The views of design document `_design/{name}`; 404 when it is missing, deleted, or has no views.
    public func viewGroup(design name: String) throws(StoreError) -> ViewGroup {
        let id = "_design/" + name
        let design = try read { db -> DesignDocument? in
            guard let row = try DocumentRow.load(id: id, from: db), let winner = row.tree.winner, !winner.deleted,
                let body = winner.body
            else { return nil }
            return DesignDocument(id: id, revision: winner.revision.description, document: try JSON(parsing: body))
        }
        guard let design else { throw StoreError.notFound("missing") }
        guard let group = ViewGroup(design: design) else { throw StoreError.notFound("missing_named_view") }
        return group
    }

    /// Answers a view query, as CouchDB's `GET /{db}/_design/{design}/_view/{view}`: brings the
    /// index up to date first (``ViewQuery/update``), then reads one snapshot of it.
    ///
    /// - Throws: 404 `missing` / `missing_named_view`; 400 `query_parse_error` for parameters
    ///   the view cannot take; the functions' failures; 413 `too_large` past ``maximumViewResultBytes``.
    public func queryView(design name: String, view viewName: String, _ query: ViewQuery) async throws(StoreError) -> ViewResult {
        try await queryView(try viewGroup(design: name), view: viewName, query)
    }

    /// Answers a query of view `viewName` of `group`.
    func queryView(_ group: ViewGroup, view viewName: String, _ query: ViewQuery) async throws(StoreError) -> ViewResult {
        let query = query.normalized
        guard let (number, view) = group.view(named: viewName) else { throw StoreError.notFound("missing_named_view") }
        let reduces = try query.reduces(view)
        let stored = try await storedGroup(group)
        if query.update == .true { try await updateView(group, stored: stored.rowID) }
        defer {
            if query.update == .lazy {
                Task { try? await self.updateView(group, stored: stored.rowID) }
            }
        }
        if reduces, let source = view.reduce {
            return try await reducedRows(of: group, stored: stored.rowID, view: number, source: source, query)
        }
        return try await ScanThreads.run { () throws(StoreError) in
            try self.read { db in try ViewScan(group: stored.rowID, view: number, query: query, db: db).mappedRows() }
        }
    }

    /// Brings the index of `_design/{name}`'s views up to the database's last sequence.
    public func updateView(design name: String) async throws(StoreError) {
        let group = try viewGroup(design: name)
        try await updateView(group, stored: try await storedGroup(group).rowID)
    }

    /// `GET /{db}/_design/{name}/_info`: CouchDB's description of the design document's index.
    public func viewInfo(design name: String) async throws(StoreError) -> JSON {
        let group = try viewGroup(design: name)
        let (sequence, bytes, running) = try read { db -> (UInt64, Int, Bool) in
            guard let stored = try ViewIndex.stored(group.design.id, signature: group.signature, in: db) else { return (0, 0, false) }
            let size = try db.statement("SELECT coalesce(sum(length(key) + length(doc) + length(json_key) + length(value) + 16), 0) FROM view_rows WHERE grp = ?")
            defer { size.reset() }
            size.bind(stored.rowID, at: 1)
            _ = try size.step()
            return (stored.sequence, size.int(0), self.viewUpdates.isRunning(stored.rowID))
        }
        return [
            "name": .string(name),
            "view_index": [
                "signature": .string(group.signature), "language": .string(group.language),
                "sizes": ["file": .number(Double(bytes)), "external": .number(Double(bytes)), "active": .number(Double(bytes))],
                "update_seq": .number(Double(sequence)), "purge_seq": 0,
                "updater_running": .bool(running), "compact_running": false, "waiting_clients": 0, "waiting_commit": false,
            ],
        ]
    }

    /// `POST /{db}/_view_cleanup`: drops the indexes no design document defines any more.
    public func cleanUpViews() async throws(StoreError) {
        try await write { context in try ViewIndex.cleanUp(in: context.connection) }
    }

    /// The stored group for `group`'s views, made empty when there is none yet.
    private func storedGroup(_ group: ViewGroup) async throws(StoreError) -> ViewIndex.Stored {
        if let stored = try read({ db in try ViewIndex.stored(group.design.id, signature: group.signature, in: db) }) { return stored }
        return try await write { context in try ViewIndex.make(group.design.id, signature: group.signature, in: context.connection) }
    }

    /// Maps what changed since the group last read, up to the last sequence now, one batch a step;
    /// one update of a group runs at a time, and a caller arriving meanwhile waits for it.
    func updateView(_ group: ViewGroup, stored rowID: Int64) async throws(StoreError) {
        let target = try read { db in try Self.lastSequence(in: db) }
        while true {
            let reached = try read { db -> UInt64? in
                let select = try db.statement("SELECT seq FROM view_groups WHERE id = ?")
                defer { select.reset() }
                select.bind(rowID, at: 1)
                return try select.step() ? UInt64(clamping: select.int64(0)) : nil
            }
            guard let reached else { throw StoreError.notFound("missing_named_view") }  // dropped meanwhile
            if reached >= target { return }
            do {
                try await viewUpdates.run(rowID) { () async throws(StoreError) in try await self.mapChanges(of: group, stored: rowID) }
            } catch let error as StoreError {
                throw error
            } catch {
                throw .internal("\(error)")
            }
        }
    }

    /// Maps changes past the group's sequence in batches until it has read the last sequence.
    private func mapChanges(of group: ViewGroup, stored rowID: Int64) async throws(StoreError) {
        let functions = options.designFunctions
        if group.native == nil, functions == nil {
            throw StoreError(.internal, error: "not_implemented", reason: "This store runs no view functions.")
        }
        while true {
            if Task.isCancelled { throw .cancelled }
            let batch = try await ScanThreads.run { () throws(StoreError) in try self.read { db in try ViewBatch(group: group, stored: rowID, in: db) } }
            guard let batch else { return }
            let documents = batch.documents.compactMap(\.document)
            var emitted: ArraySlice<[[ViewEmission]]> = []
            if let native = group.native {
                emitted = documents.map { [native.map($0)] }[...]
            } else if let functions, !documents.isEmpty {
                emitted = try await functions.map(documents, by: group)[...]
            }
            let mapped = batch.documents.map { entry in
                ViewIndex.Mapped(id: entry.id, rows: entry.document == nil ? nil : emitted.popFirst())
            }
            let applied = try await write { context in
                try ViewIndex.apply(mapped, group: rowID, from: batch.from, reached: batch.reached, in: context.connection)
            }
            if !applied { return }
        }
    }

    /// A reduce query's rows: the range read page by page, folded group by group.
    private func reducedRows(of group: ViewGroup, stored rowID: Int64, view number: Int, source: String, _ query: ViewQuery) async throws(StoreError) -> ViewResult {
        let builtin = BuiltinReduce(source: source)
        if builtin == nil, BuiltinReduce.isBuiltin(source) {
            throw StoreError(.badRequest, error: "unknown_builtin_reduce", reason: "Builtin reduce function `\(source)` is not supported.")
        }
        let functions = options.designFunctions
        let reduce = { @Sendable (calls: [ReduceCall]) async throws(StoreError) -> [JSON] in
            if case .function(let function)? = group.native?.reduce {
                do {
                    return try calls.map { try function($0.keys, $0.values, $0.keys == nil) }
                } catch {
                    throw (error as? StoreError) ?? StoreError(.internal, error: "reduce_error", reason: "\(error)")
                }
            }
            guard let functions else { throw StoreError(.internal, error: "not_implemented", reason: "This store runs no reduce functions.") }
            return try await functions.reduce(calls, by: source, of: group)
        }
        var folding = ReducedGroups(level: query.groupingLevel, builtin: builtin, skip: query.skip, limit: query.limit ?? .max)
        var cursor: ViewScan.Cursor?
        var sequence: UInt64 = 0
        repeat {
            if Task.isCancelled { throw .cancelled }
            let after = cursor
            let page = try await ScanThreads.run { () throws(StoreError) in
                try self.read { db in try ViewScan(group: rowID, view: number, query: query, db: db).page(after: after, size: 10_000) }
            }
            sequence = page.sequence
            for row in page.rows { try folding.add(row) }
            cursor = page.next
            if builtin == nil { try await folding.runCalls(reduce) }
        } while cursor != nil && !folding.isFull
        folding.finish()
        if builtin == nil { try await folding.runCalls(reduce) }
        return ViewResult(totalRows: nil, offset: nil, rows: try folding.rows(), updateSequence: sequence)
    }
}

/// One update in progress per view group: a second caller waits for the first's instead of
/// mapping the same documents again.
final class ViewUpdates: Sendable {
    private let running = Locked<[Int64: Task<Void, any Error>]>([:])

    /// Runs `update` for `group`, or waits for the one running.
    func run(_ group: Int64, _ update: @escaping @Sendable () async throws(StoreError) -> Void) async throws {
        let task = running.withLock { running in
            if let task = running[group] { return task }
            let task = Task<Void, any Error> {
                defer { self.running.withLock { _ = $0.removeValue(forKey: group) } }
                try await update()
            }
            running[group] = task
            return task
        }
        try await task.value
    }

    func isRunning(_ group: Int64) -> Bool { running.withLock { $0[group] != nil } }
}

/// The next documents a group has not mapped: each changed document's id and, when the group
/// maps it, its winning revision as map functions see it.
struct ViewBatch: Sendable {
    let from: UInt64
    let reached: UInt64
    let documents: [(id: String, document: JSON?)]

    /// `nil` when the group has read everything.
    init?(group: ViewGroup, stored rowID: Int64, in db: Connection) throws {
        let select = try db.statement("SELECT seq FROM view_groups WHERE id = ?")
        select.bind(rowID, at: 1)
        guard try select.step() else {
            select.reset()
            throw StoreError.notFound("missing_named_view")
        }
        let start = UInt64(clamping: select.int64(0))
        select.reset()
        let changes = try db.statement("SELECT seq, id, deleted, tree FROM docs WHERE seq > ? ORDER BY seq LIMIT ?")
        defer { changes.reset() }
        changes.bind(start, at: 1)
        changes.bind(Database.viewBatch.documents, at: 2)
        var documents: [(id: String, document: JSON?)] = []
        var reached = start
        var bytes = 0
        while bytes < Database.viewBatch.bytes, try changes.step() {
            reached = UInt64(changes.int64(0))
            let id = changes.string(1)
            var document: JSON?
            if changes.int(2) == 0, group.maps(id) {
                let tree = changes.blob(3)
                bytes += tree.count
                let row = DocumentRow(id: id, sequence: reached, tree: try RevisionTree(decoding: tree))
                if let winner = row.tree.winner, !winner.deleted { document = try row.revision(at: winner, history: false)?.json() }
            }
            documents.append((id, document))
        }
        guard reached > start else { return nil }
        from = start
        self.reached = reached
        self.documents = documents
    }
}

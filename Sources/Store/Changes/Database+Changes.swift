extension Database {
    /// ``changes(_:)`` for a task: on ``ScanThreads`` when a filter may stretch the page over the
    /// whole database (``ChangesOptions/mayScanEverything``), else here (a page of at most
    /// `limit` rows, where a hop would only add latency, as to every longpoll).
    public func changesPage(_ options: ChangesOptions) async throws(StoreError) -> ChangesPage {
        guard options.mayScanEverything else { return try changes(options) }
        return try await ScanThreads.run { () throws(StoreError) in try self.changes(options) }
    }

    /// Reads the changes feed: each document once, at its latest sequence.
    public func changes(_ options: ChangesOptions) throws(StoreError) -> ChangesPage {
        try read { db in
            let meta = try db.statement("SELECT value FROM meta WHERE key = 'last_seq'")
            let lastSequence = try meta.step() ? UInt64(meta.int64(0)) : 0
            let limit = options.limit ?? Int.max
            var changes: [Change] = []
            var rowBytes = 0
            if limit == 0 { return ChangesPage(changes: [], lastSequence: options.since, pending: Int(lastSequence - min(options.since, lastSequence))) }

            let needsTree = options.allLeaves || options.includeDocuments || options.selector != nil
            func consider(sequence: UInt64, id: String, winner: String, deleted: Bool, tree: [UInt8]) throws {
                if options.designOnly, !id.hasPrefix("_design/") { return }
                guard needsTree else {
                    guard let revision = RevisionID(winner) else { throw StoreError.internal("corrupt winner of \(id)") }
                    changes.append(Change(sequence: sequence, id: id, deleted: deleted, revisions: [revision], document: nil))
                    return
                }
                rowBytes += tree.count
                let row = DocumentRow(id: id, sequence: sequence, tree: try RevisionTree(decoding: tree))
                guard let winnerNode = row.tree.winner else { return }
                let document = (options.includeDocuments || options.selector != nil) ? try row.revision(at: winnerNode) : nil
                if let selector = options.selector {
                    guard let document, selector.matches(document.json()) else { return }
                }
                let revisions = options.allLeaves ? row.tree.leaves.map(\.revision) : [winnerNode.revision]
                changes.append(Change(sequence: sequence, id: id, deleted: winnerNode.deleted, revisions: revisions,
                                      document: options.includeDocuments ? document : nil))
            }

            if let ids = options.documentIDs {
                let select = try db.statement(options.firstHandOnly ? "SELECT seq, winner, deleted, tree FROM docs WHERE id = ? AND relayed = 0"
                                              : "SELECT seq, winner, deleted, tree FROM docs WHERE id = ?")
                var found: [(UInt64, String, String, Bool, [UInt8])] = []
                for id in ids {
                    select.reset()
                    select.bind(id, at: 1)
                    if try select.step(), UInt64(select.int64(0)) > options.since {
                        found.append((UInt64(select.int64(0)), id, select.string(1), select.int(2) != 0, select.blob(3)))
                    }
                }
                found.sort { options.descending ? $0.0 > $1.0 : $0.0 < $1.0 }
                for entry in found where changes.count < limit {
                    try consider(sequence: entry.0, id: entry.1, winner: entry.2, deleted: entry.3, tree: entry.4)
                }
            } else {
                let order = options.descending ? "DESC" : "ASC"
                let columns = needsTree ? "seq, id, winner, deleted, tree" : "seq, id, winner, deleted"
                let firstHand = options.firstHandOnly ? " AND relayed = 0" : ""
                let select = try db.statement(sql: "SELECT \(columns) FROM docs WHERE seq > ?\(firstHand) ORDER BY seq \(order)")
                select.bind(options.since, at: 1)
                // A filter may pass over the whole database for one page: stop when the asking task is cancelled.
                var examined = 0
                while changes.count < limit, try select.step() {
                    examined += 1
                    if examined % 1024 == 0, ScanStop.shouldStop {
                        select.reset()
                        throw StoreError.cancelled
                    }
                    try consider(sequence: UInt64(select.int64(0)), id: select.string(1), winner: select.string(2),
                                 deleted: select.int(3) != 0, tree: needsTree ? select.blob(4) : [])
                }
                select.reset()
            }

            let reachedLimit = changes.count >= limit
            let last = reachedLimit || options.descending ? (changes.last?.sequence ?? options.since) : max(lastSequence, options.since)
            let pending = options.descending ? 0 : Int(lastSequence - min(last, lastSequence))
            return ChangesPage(changes: changes, lastSequence: last, pending: pending, rowBytes: rowBytes)
        }
    }

    /// A never-ending feed: the changes since `options.since`, then each new
    /// commit's changes as they commit. Each element is a page: every change
    /// committed and not yet delivered, up to `pageSize`, so a burst arrives
    /// in full pages and a lone write alone and at once. A slow consumer holds
    /// no more than a page in memory. The feed ends when the database closes,
    /// the limit is reached, or the consuming task is cancelled.
    public func changeFeed(_ options: ChangesOptions, pageSize: Int = 500) -> ChangeFeed {
        ChangeFeed(database: self, options: options, pageSize: pageSize)
    }
}

/// The continuous changes feed of a database, in pages; see ``Database/changeFeed(_:pageSize:)``.
public struct ChangeFeed: AsyncSequence, Sendable {
    public typealias Element = [Change]

    let database: Database
    let options: ChangesOptions
    let pageSize: Int

    public func makeAsyncIterator() -> Iterator {
        Iterator(database: database, options: options, pageSize: pageSize, commits: database.commits().makeAsyncIterator())
    }

    /// Reads the next page, and waits for a commit when the feed is exhausted.
    public struct Iterator: AsyncIteratorProtocol {
        let database: Database
        var options: ChangesOptions
        let pageSize: Int
        var commits: AsyncStream<UInt64>.Iterator
        var remaining: Int?

        init(database: Database, options: ChangesOptions, pageSize: Int, commits: AsyncStream<UInt64>.Iterator) {
            self.database = database
            self.options = options
            self.pageSize = Swift.max(1, pageSize)
            self.commits = commits
            self.remaining = options.limit
        }

        public mutating func next() async throws -> [Change]? {
            while true {
                if remaining == 0 || Task.isCancelled { return nil }
                var page = options
                page.limit = Swift.min(pageSize, remaining ?? pageSize)
                let result = try database.sharedFeedPage.page(page) { () throws(StoreError) in try database.changes(page) }
                options.since = result.lastSequence
                if !result.changes.isEmpty {
                    if let count = remaining { remaining = count - result.changes.count }
                    return result.changes
                }
                if await commits.next() == nil { return nil }
            }
        }
    }
}

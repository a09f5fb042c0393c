import FoundationEssentials

extension Database {
    /// How many revisions of history each document keeps (CouchDB's `_revs_limit`, default 1000).
    public func revsLimit() throws(StoreError) -> Int {
        try setting("revs_limit", default: 1000)
    }

    /// Changes the revision history limit for later writes.
    public func setRevsLimit(_ limit: Int) async throws(StoreError) {
        guard limit >= 1 else { throw .badRequest("revs_limit must be a positive integer") }
        try await write { context in
            try Self.store(setting: "revs_limit", limit, in: context)
            context.revsLimit = limit
        }
    }

    /// An integer setting kept in `meta`, or `defaultValue` when never set.
    private func setting(_ key: String, default defaultValue: Int) throws(StoreError) -> Int {
        try read { db in
            let select = try db.statement("SELECT value FROM meta WHERE key = ?")
            select.bind(key, at: 1)
            return try select.step() ? select.int(0) : defaultValue
        }
    }

    private static func store(setting key: String, _ value: Int, in context: WriteContext) throws {
        let update = try context.connection.statement("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)")
        update.bind(key, at: 1)
        update.bind(value, at: 2)
        try update.run()
    }

    /// Drops the bodies of revisions that are no longer leaves, deletes
    /// attachment files no revision refers to, and returns freed pages to the
    /// file system. Documents are rewritten in batches so writers are held up
    /// only briefly.
    public func compact() async throws(StoreError) {
        try await write { context in try context.connection.execute("DELETE FROM ancestor_bodies") }
        var after: Int64 = -1
        while true {
            let start = after
            let next = try await write { context -> Int64? in
                let db = context.connection
                let select = try db.statement("SELECT seq, tree FROM docs WHERE seq > ? ORDER BY seq LIMIT 500")
                select.bind(start, at: 1)
                var rows: [(Int64, RevisionTree)] = []
                while try select.step() { rows.append((select.int64(0), try RevisionTree(decoding: select.blob(1)))) }
                select.reset()
                let update = try db.statement("UPDATE docs SET tree = ? WHERE seq = ?")
                for (sequence, tree) in rows {
                    var compacted = tree
                    compacted.compact()
                    if compacted != tree {
                        update.reset()
                        update.bind(compacted.encoded(), at: 1)
                        update.bind(sequence, at: 2)
                        try update.run()
                    }
                }
                return rows.last?.0
            }
            guard let next else { break }
            after = next
        }
        let attachments = self.attachments
        try await write { context in
            var referenced = Set<String>()
            let select = try context.connection.statement("SELECT tree FROM docs")
            while try select.step() {
                for node in try RevisionTree(decoding: select.blob(0)).nodes {
                    for attachment in node.attachments { referenced.insert(attachment.key) }
                }
            }
            select.reset()
            _ = attachments.removeOrphans(keeping: referenced)
        }
        do {
            _ = try await writer.exclusive { db in
                try db.execute("PRAGMA incremental_vacuum")
                try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .internal("\(error)")
        }
    }

    /// Removes revisions as if they had never existed (CouchDB's `_purge`):
    /// each named leaf and the ancestors no other leaf shares. A document left
    /// with no leaves is removed entirely. Returns what was purged per document.
    /// Each document of the request counts one in the purge sequence, as in CouchDB.
    @discardableResult
    public func purge(_ request: [(id: String, revisions: [RevisionID])]) async throws(StoreError) -> [(id: String, purged: [RevisionID])] {
        defer { if request.contains(where: { $0.id.hasPrefix("_design/") }) { designs.invalidate() } }
        return try await write { context in
            let purged = try request.map { id, revisions in (id, try Self.purge(id: id, revisions: revisions, in: &context)) }
            let count = try context.connection.statement(
                "INSERT INTO meta(key, value) VALUES ('purge_seq', ?) ON CONFLICT(key) DO UPDATE SET value = value + excluded.value")
            count.bind(request.count, at: 1)
            try count.run()
            return purged
        }
    }

    /// How many purge requests CouchDB would keep for its indexes (`_purge_infos_limit`,
    /// default 1000). syncd removes a purged document's index entries in the purge's own transaction, so it keeps none;
    /// the setting is stored for clients that read it back.
    public func purgeInfosLimit() throws(StoreError) -> Int {
        try setting("purge_infos_limit", default: 1000)
    }

    /// Sets ``purgeInfosLimit()``.
    public func setPurgeInfosLimit(_ limit: Int) async throws(StoreError) {
        guard limit >= 1 else { throw .badRequest("`purge_infos_limit` must be positive integer") }
        try await write { context in try Self.store(setting: "purge_infos_limit", limit, in: context) }
    }

    static func purge(id: String, revisions: [RevisionID]?, in context: inout WriteContext) throws -> [RevisionID] {
        let db = context.connection
        guard let row = try DocumentRow.load(id: id, from: db), let oldWinner = row.tree.winner else { return [] }
        let (tree, purged) = row.tree.purging(revisions)
        guard !purged.isEmpty else { return [] }
        context.winnersWritten.updateValue(nil, forKey: id)
        if let winner = tree.winner {
            let update = try db.statement("UPDATE docs SET seq = ?, winner = ?, deleted = ?, tree = ? WHERE seq = ?")
            update.bind(Int64(context.nextSequence()), at: 1)
            update.bind(winner.revision.description, at: 2)
            update.bind(winner.deleted ? 1 : 0, at: 3)
            update.bind(tree.encoded(), at: 4)
            update.bind(Int64(row.sequence), at: 5)
            try update.run()
            try AncestorBodies.forget(id: id, except: tree, in: db)
            try IndexEntries.documentStored(id: id, body: winner.deleted ? nil : winner.body, in: &context)
            try ViewIndex.documentStored(id: id, body: winner.deleted ? nil : winner.body, in: &context)
            if winner.deleted != oldWinner.deleted {
                context.docCount += winner.deleted ? -1 : 1
                context.deletedCount += winner.deleted ? 1 : -1
            }
        } else {
            let delete = try db.statement("DELETE FROM docs WHERE seq = ?")
            delete.bind(Int64(row.sequence), at: 1)
            try delete.run()
            try AncestorBodies.forget(id: id, except: nil, in: db)
            try IndexEntries.forget(id: id, in: &context)
            try IndexEntries.documentStored(id: id, body: nil, in: &context)
            try ViewIndex.forget(id: id, in: &context)
            try ViewIndex.documentStored(id: id, body: nil, in: &context)
            if oldWinner.deleted { context.deletedCount -= 1 } else { context.docCount -= 1 }
        }
        return purged
    }

    /// Sets (or with `nil` clears) the time after which a document is purged.
    public func setExpiration(id: String, at date: Date?) async throws(StoreError) {
        try await write { context in
            let update = try context.connection.statement("UPDATE docs SET expires = ? WHERE id = ?")
            update.bind(date?.timeIntervalSince1970, at: 1)
            update.bind(id, at: 2)
            try update.run()
            guard context.connection.changes > 0 else { throw StoreError.notFound("missing") }
        }
        restartExpiry()
    }

    /// When a document is set to expire, or `nil`.
    public func expiration(id: String) throws(StoreError) -> Date? {
        try read { db in
            let select = try db.statement("SELECT expires FROM docs WHERE id = ?")
            select.bind(id, at: 1)
            guard try select.step() else { throw StoreError.notFound("missing") }
            return select.optionalDouble(0).map { Date(timeIntervalSince1970: $0) }
        }
    }

    /// Purges every document whose expiration has passed; returns how many.
    /// The database also does this by itself when the earliest expiration comes.
    @discardableResult
    public func purgeExpired(now: Date = Date()) async throws(StoreError) -> Int {
        try await write { context in
            let select = try context.connection.statement("SELECT id FROM docs WHERE expires IS NOT NULL AND expires <= ?")
            select.bind(now.timeIntervalSince1970, at: 1)
            var ids: [String] = []
            while try select.step() { ids.append(select.string(0)) }
            select.reset()
            for id in ids { _ = try Self.purge(id: id, revisions: nil, in: &context) }
            return ids.count
        }
    }

    func nextExpiration() throws(StoreError) -> Date? {
        try read { db in
            let select = try db.statement("SELECT min(expires) FROM docs WHERE expires IS NOT NULL")
            guard try select.step() else { return nil }
            return select.optionalDouble(0).map { Date(timeIntervalSince1970: $0) }
        }
    }
}

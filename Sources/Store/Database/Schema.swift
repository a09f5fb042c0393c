/// The tables of one database file.
///
/// `docs` keeps one row per document: its current sequence is the rowid, so
/// the changes feed is a scan in rowid order and each document appears once,
/// at its latest change. The whole revision tree, with the bodies it still
/// holds, is one BLOB; the winner and its deletion flag are columns so listings
/// need not decode it. Bodies of revisions that are no longer leaves move to
/// `ancestor_bodies` until compaction, so the tree rewritten on each update
/// stays small. `relayed` marks a row whose latest change a group member's pull
/// wrote (``ChangesOptions/firstHandOnly`` leaves such rows out). `query_indexes`
/// and `query_entries` hold the Mango indexes (``IndexEntries``), `view_groups` and
/// `view_rows` the views' (``ViewIndex``).
enum Schema {
    static let version = 4

    static func migrate(_ db: Connection) throws(StoreError) {
        let current = try userVersion(db)
        guard current < version else {
            if current > version { throw .internal("database schema \(current) is newer than this syncd (\(version))") }
            return
        }
        try db.execute("""
            PRAGMA auto_vacuum = INCREMENTAL;
            BEGIN IMMEDIATE;
            CREATE TABLE IF NOT EXISTS meta (
                key TEXT PRIMARY KEY NOT NULL,
                value ANY
            ) STRICT;
            CREATE TABLE IF NOT EXISTS docs (
                seq INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                winner TEXT NOT NULL,
                deleted INTEGER NOT NULL,
                tree BLOB NOT NULL,
                expires REAL,
                relayed INTEGER NOT NULL DEFAULT 0
            ) STRICT;
            CREATE INDEX IF NOT EXISTS docs_by_expiry ON docs(expires) WHERE expires IS NOT NULL;
            CREATE TABLE IF NOT EXISTS local_docs (
                id TEXT PRIMARY KEY NOT NULL,
                rev INTEGER NOT NULL,
                body BLOB NOT NULL
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS ancestor_bodies (
                id TEXT NOT NULL,
                rev TEXT NOT NULL,
                body BLOB NOT NULL,
                PRIMARY KEY (id, rev)
            ) STRICT, WITHOUT ROWID;
            \(IndexEntries.schema)
            \(ViewIndex.schema)
            """)
        do {
            // A file from before rows were marked relayed: every change counts as first-hand.
            if try !hasColumn("relayed", of: "docs", in: db) {
                try db.execute("ALTER TABLE docs ADD COLUMN relayed INTEGER NOT NULL DEFAULT 0")
            }
            // A file from before indexes were kept may hold design documents that define some.
            try IndexEntries.defineAll(in: db)
            try db.execute("PRAGMA user_version = \(version); COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error as? StoreError ?? .internal("cannot build the query indexes: \(error)")
        }
    }

    /// Empties every index whose keys were made by another version of the collation
    /// (``CollationSortKey/version``): Mango's entries and views' rows, to be built again by
    /// the next query, since keys of two versions cannot be compared. A file without a
    /// recorded version has the first.
    static func rebuildIndexesOfOtherCollation(_ db: Connection) throws(StoreError) {
        let select = try db.statement("SELECT value FROM meta WHERE key = 'collation_version'")
        let stored = try select.step() ? select.int(0) : nil
        select.reset()
        let current = CollationSortKey.version
        if stored == current { return }
        // Indexes built before the version was recorded were built with the first.
        let rebuild = (stored ?? 1) != current
        try db.execute("""
            BEGIN IMMEDIATE;
            \(rebuild ? """
                DELETE FROM query_entries;
                UPDATE query_indexes SET seq = 0;
                DELETE FROM view_rows;
                DELETE FROM view_blocks;
                UPDATE view_groups SET seq = 0;
                """ : "")
            INSERT OR REPLACE INTO meta(key, value) VALUES ('collation_version', \(current));
            COMMIT
            """)
    }

    private static func hasColumn(_ column: String, of table: String, in db: Connection) throws(StoreError) -> Bool {
        let statement = try db.statement("SELECT 1 FROM pragma_table_info(?) WHERE name = ?")
        statement.bind(table, at: 1)
        statement.bind(column, at: 2)
        defer { statement.reset() }
        return try statement.step()
    }

    private static func userVersion(_ db: Connection) throws(StoreError) -> Int {
        let statement = try db.statement("PRAGMA user_version")
        return try statement.step() ? statement.int(0) : 0
    }
}

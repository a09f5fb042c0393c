import CSQLite

/// One SQLite connection. Not thread-safe: each connection is owned by the
/// writer or checked out by one reader at a time, which is what makes the
/// store's concurrency sound without a lock around SQLite itself.
final class Connection {
    let handle: OpaquePointer
    private var statements: [String: Statement] = [:]

    /// Opens (creating if asked) the database file at `path`.
    init(path: String, readOnly: Bool) throws(StoreError) {
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_PRIVATECACHE
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw .internal("cannot open \(path): \(message)")
        }
        self.handle = handle
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, 10_000)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(StoreError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        if status != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error \(status)"
            sqlite3_free(message)
            throw .internal("SQLite: \(text)")
        }
    }

    /// A prepared statement for `sql`, compiled once per connection and reused.
    func statement(_ sql: String) throws(StoreError) -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        let statement = try Statement(connection: self, sql: sql)
        statements[sql] = statement
        return statement
    }

    /// Resets every cached statement, so none keeps a read snapshot or a table lock.
    func resetStatements() {
        for statement in statements.values { statement.reset() }
    }

    /// Rows changed by the last statement.
    var changes: Int { Int(sqlite3_changes(handle)) }

    func error(_ status: Int32) -> StoreError {
        .internal("SQLite error \(status): \(String(cString: sqlite3_errmsg(handle)))")
    }
}

import CSQLite
import Glibc

/// One SQLite connection. Not thread-safe: each connection is owned by the
/// writer or checked out by one reader at a time, which is what makes the
/// store's concurrency sound without a lock around SQLite itself.
final class Connection {
    let handle: OpaquePointer
    private var statements: [String: Statement] = [:]
    private var literalStatements: [UnsafeRawPointer: Statement] = [:]

    /// Process-wide SQLite settings, applied before the first connection opens:
    /// no memory statistics (they cost a global mutex on every allocation).
    private static let configured: Void = { _ = csqlite_disable_memory_statistics() }()

    /// Opens (creating if asked) the database file at `path`.
    init(path: String, readOnly: Bool) throws(StoreError) {
        Self.configured
        if !readOnly {
            // Created for the owner only; SQLite gives the -wal and -shm files the same mode.
            let descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            if descriptor >= 0 { close(descriptor) }
        }
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
        literalStatements.removeAll()
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
            throw failure(status, reason: "SQLite: \(text)")
        }
    }

    /// A prepared statement for `sql`, compiled once per connection and reused.
    /// Looked up by the literal's address, which costs less than hashing its text.
    func statement(_ sql: StaticString) throws(StoreError) -> Statement {
        let key = UnsafeRawPointer(sql.utf8Start)
        if let cached = literalStatements[key] {
            cached.reset()
            return cached
        }
        let statement = try statement(sql: sql.description)
        literalStatements[key] = statement
        return statement
    }

    /// A prepared statement for SQL built at run time, compiled once per connection and reused.
    func statement(sql: String) throws(StoreError) -> Statement {
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

    /// Pages written out (to the write-ahead log) since the last call.
    func takePagesWritten() -> Int {
        var current: Int32 = 0
        var highest: Int32 = 0
        sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_WRITE, &current, &highest, 1)
        return Int(current)
    }

    /// Bytes of page cache this connection holds now.
    var cacheUsed: Int {
        var current: Int32 = 0
        var highest: Int32 = 0
        sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0)
        return Int(current)
    }

    /// Frees the page cache pages no statement holds; they are read again when next needed.
    func releaseMemory() { sqlite3_db_release_memory(handle) }

    /// Rows changed by the last statement.
    var changes: Int { Int(sqlite3_changes(handle)) }

    func error(_ status: Int32) -> StoreError {
        failure(status, reason: "SQLite error \(status): \(String(cString: sqlite3_errmsg(handle)))")
    }

    /// A full disk or quota (`SQLITE_FULL`, or an I/O error from `ENOSPC` or `EDQUOT`) is
    /// 507 insufficient_storage; any other failure 500.
    private func failure(_ status: Int32, reason: String) -> StoreError {
        let cause = sqlite3_system_errno(handle)
        if status & 0xff == SQLITE_FULL || (status & 0xff == SQLITE_IOERR && (cause == ENOSPC || cause == EDQUOT)) {
            return .insufficientStorage(reason)
        }
        return .internal(reason)
    }
}

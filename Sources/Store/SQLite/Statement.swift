import CSQLite

/// SQLite wants to copy bound text and blobs.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A compiled SQL statement with typed binding and column access.
final class Statement {
    let handle: OpaquePointer
    private unowned let connection: Connection

    init(connection: Connection, sql: String) throws(StoreError) {
        var handle: OpaquePointer?
        let status = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard status == SQLITE_OK, let handle else { throw connection.error(status) }
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func bind(_ value: Int64, at index: Int32) { sqlite3_bind_int64(handle, index, value) }
    func bind(_ value: Int, at index: Int32) { sqlite3_bind_int64(handle, index, Int64(value)) }
    /// A sequence: SQLite's integers end at `Int64.max`, and no row has a larger one.
    func bind(_ value: UInt64, at index: Int32) { sqlite3_bind_int64(handle, index, Int64(clamping: value)) }
    func bind(_ value: Double, at index: Int32) { sqlite3_bind_double(handle, index, value) }
    /// Text with its byte length: an id may hold NUL, which must not end it.
    func bind(_ value: String, at index: Int32) {
        guard !value.isEmpty else {
            sqlite3_bind_text(handle, index, "", 0, transient)  // a nil pointer would bind NULL
            return
        }
        var value = value
        value.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { text in
                _ = sqlite3_bind_text64(handle, index, text.baseAddress, sqlite3_uint64(text.count), transient, UInt8(SQLITE_UTF8))
            }
        }
    }
    func bindNull(at index: Int32) { sqlite3_bind_null(handle, index) }
    func bind(_ value: [UInt8], at index: Int32) {
        value.withUnsafeBytes { buffer in
            _ = sqlite3_bind_blob64(handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64(buffer.count), transient)
        }
    }
    func bind(_ value: String?, at index: Int32) {
        if let value { bind(value, at: index) } else { bindNull(at: index) }
    }
    func bind(_ value: Double?, at index: Int32) {
        if let value { bind(value, at: index) } else { bindNull(at: index) }
    }

    /// Advances to the next row; false when done.
    func step() throws(StoreError) -> Bool {
        let status = sqlite3_step(handle)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(status)
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws(StoreError) {
        while try step() {}
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func string(_ column: Int32) -> String {
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }
    func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }
    /// A blob column's bytes as SQLite holds them, without a copy: valid only within `body`.
    func withBlob<T>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws(StoreError) -> T) throws(StoreError) -> T {
        let start = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return try body(UnsafeBufferPointer(start: start?.assumingMemoryBound(to: UInt8.self), count: start == nil ? 0 : count))
    }
    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}

extension Statement {
    /// A column of any type, for the untyped `meta` table.
    enum Value {
        case integer(Int64)
        case text(String)
        case other

        var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
        var text: String? { if case .text(let value) = self { value } else { nil } }
    }

    func value(_ column: Int32) -> Value {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: .integer(int64(column))
        case SQLITE_TEXT: .text(string(column))
        default: .other
        }
    }
}

import FoundationEssentials
import Locking

/// The databases in one data directory, each opened once and shared.
///
/// Database names follow CouchDB's rule: a lower-case letter, then lower-case
/// letters, digits and `_ $ ( ) + - /`.
public final class Catalog: Sendable {
    /// The data directory.
    public let directory: String
    private let options: Database.Options
    /// The largest document body, without attachments, its databases take (`max_document_size`).
    public var maximumDocumentSize: Int { options.maximumDocumentSize }
    private let open = Locked<[String: Entry]>([:])

    /// An open database and when it was last asked for.
    private struct Entry {
        let database: Database
        var lastUsed = ContinuousClock.now
        /// Whether its memory was released since it was last asked for.
        var released = false
    }

    /// A catalog over `directory`, created if missing (readable by its owner only: 0700).
    public init(directory: String, options: Database.Options = Database.Options()) throws(StoreError) {
        self.directory = directory
        self.options = options
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw .internal("cannot create \(directory): \(error)")
        }
    }

    /// Whether `name` is a valid database name.
    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, ("a"..."z").contains(first), name.utf8.count <= 238 else { return false }
        return name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || "_$()+-/".unicodeScalars.contains($0) }
    }

    private func path(for name: String) -> String {
        directory + "/" + name.replacing("/", with: "%2F") + ".sqlite"
    }

    private func checkName(_ name: String) throws(StoreError) {
        guard Self.isValidName(name) else {
            throw StoreError(.badRequest, error: "illegal_database_name",
                             reason: "Name: '\(name)'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.")
        }
    }

    /// The names of all databases, sorted.
    public func names() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasSuffix(".sqlite") }
            .map { String($0.dropLast(7)).replacing("%2F", with: "/") }
            .filter(Self.isValidName)
            .sorted()
    }

    /// Whether the database exists.
    public func exists(_ name: String) -> Bool {
        Self.isValidName(name) && FileManager.default.fileExists(atPath: path(for: name))
    }

    /// The existing database `name`; 404 if there is none.
    public func database(_ name: String) throws(StoreError) -> Database {
        try checkName(name)
        return try open.withLock { open throws(StoreError) -> Database in
            if let entry = open[name] {
                open[name] = Entry(database: entry.database)
                return entry.database
            }
            guard FileManager.default.fileExists(atPath: path(for: name)) else {
                throw StoreError(.notFound, error: "not_found", reason: "Database does not exist.")
            }
            let database = try Database.open(path: path(for: name), name: name, options: options)
            open[name] = Entry(database: database)
            return database
        }
    }

    /// Creates database `name`; 412 `file_exists` if it exists.
    @discardableResult
    public func create(_ name: String) throws(StoreError) -> Database {
        try checkName(name)
        return try open.withLock { open throws(StoreError) -> Database in
            guard open[name] == nil, !FileManager.default.fileExists(atPath: path(for: name)) else {
                throw StoreError(.preconditionFailed, error: "file_exists", reason: "The database could not be created, the file already exists.")
            }
            let database = try Database.open(path: path(for: name), name: name, options: options)
            open[name] = Entry(database: database)
            return database
        }
    }

    /// The database `name`, created if missing.
    public func openOrCreate(_ name: String) throws(StoreError) -> Database {
        do {
            return try database(name)
        } catch where error.kind == .notFound {
            do {
                return try create(name)
            } catch where error.kind == .preconditionFailed {
                return try database(name)
            }
        }
    }

    /// Closes and deletes database `name` with its attachments.
    public func delete(_ name: String) throws(StoreError) {
        try checkName(name)
        try open.withLock { open throws(StoreError) in
            let file = path(for: name)
            guard FileManager.default.fileExists(atPath: file) else {
                throw StoreError(.notFound, error: "not_found", reason: "Database does not exist.")
            }
            open.removeValue(forKey: name)?.database.close()
            for suffix in ["", "-wal", "-shm", ".attachments"] {
                try? FileManager.default.removeItem(atPath: file + suffix)
            }
        }
    }

    /// Releases the memory of each open database not asked for during the
    /// last `idle` (``Database/releaseMemory()``), once per idle spell. Returns
    /// how many were released. A database still used through a reference kept
    /// since works on, with its caches filling again.
    @discardableResult
    public func releaseIdle(after idle: Duration) -> Int {
        let now = ContinuousClock.now
        let idleDatabases = open.withLock { open in
            var idleDatabases: [Database] = []
            for (name, entry) in open where !entry.released && now - entry.lastUsed >= idle {
                open[name]?.released = true
                idleDatabases.append(entry.database)
            }
            return idleDatabases
        }
        for database in idleDatabases { database.releaseMemory() }
        return idleDatabases.count
    }

    /// When the next open database will have gone `idle` unasked (be due for
    /// ``releaseIdle(after:)``); `nil` while every open one is released.
    public func nextIdle(after idle: Duration) -> ContinuousClock.Instant? {
        open.withLock { open in open.values.lazy.filter { !$0.released }.map { $0.lastUsed + idle }.min() }
    }

    /// Closes every open database.
    public func close() {
        let databases = open.withLock { open in
            defer { open.removeAll() }
            return open.values.map(\.database)
        }
        for database in databases { database.close() }
    }
}

import Locking
import Synchronization

/// Read-only connections, each used by one reader at a time.
///
/// In WAL mode a reader sees the last commit made before its transaction
/// began and never waits for the writer, nor the writer for it.
final class Readers: Sendable {
    /// Connections, each opened on first use.
    private let connections: [Locked<Connection?>]
    private let path: String
    private let next = Atomic<Int>(0)
    /// How much of the database file a reader maps (SQLite's `mmap_size`): the
    /// pages are the OS's file cache, shared by the readers and given back under
    /// memory pressure; past it, pages are read with `pread`.
    static let mappedBytes = 256 << 20

    init(path: String, count: Int) {
        self.path = path
        self.connections = (0..<count).map { _ in Locked(nil) }
    }

    /// Runs `work` in a read transaction: every statement in it sees the same snapshot.
    func read<T: Sendable>(_ work: @Sendable (Connection) throws -> T) throws -> T {
        for slot in connections {
            if let result = try slot.withLockIfAvailable({ try run(work, on: &$0) }) { return result }
        }
        let start = next.wrappingAdd(1, ordering: .relaxed).oldValue
        return try connections[start % connections.count].withLock { try run(work, on: &$0) }
    }

    private func run<T: Sendable>(_ work: @Sendable (Connection) throws -> T, on slot: inout Connection?) throws -> T {
        let connection: Connection
        if let open = slot {
            connection = open
        } else {
            connection = try Connection(path: path, readOnly: true)
            try connection.execute("PRAGMA query_only = 1")
            // Pages are read from the OS's cache in place, not copied by one pread each:
            // a query that looks up 100 documents by id touches some 200 pages.
            try connection.execute("PRAGMA mmap_size = \(Self.mappedBytes)")
            slot = connection
        }
        try connection.execute("BEGIN")
        defer {
            connection.resetStatements()
            try? connection.execute("COMMIT")
        }
        return try work(connection)
    }

    /// Runs `body` while no reader is in a transaction: readers wait meanwhile.
    /// The writer uses it to reset a write-ahead log that overlapping readers
    /// would otherwise keep growing.
    func pause(_ body: () -> Void) {
        func hold(_ index: Int) {
            guard index < connections.count else { return body() }
            connections[index].withLock { _ in hold(index + 1) }
        }
        hold(0)
    }

    /// Closes the connections no reader is using now (they reopen when next
    /// needed), giving back their caches.
    func closeUnused() {
        for slot in connections { _ = slot.withLockIfAvailable { $0 = nil } }
    }

    /// Bytes of page cache the open connections hold (those in use are not counted).
    var cacheUsed: Int {
        connections.reduce(0) { sum, slot in sum + (slot.withLockIfAvailable { $0?.cacheUsed ?? 0 } ?? 0) }
    }

    /// Closes every idle connection.
    func close() {
        for slot in connections { slot.withLock { $0 = nil } }
    }
}

import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Locking

/// A small JSON file of the data directory (users, paired peers, invitations).
///
/// It is private to its owner (0600) and replaced atomically. Reads are cached
/// and re-read when the file's stamp changes (a file edited by hand). Changes go
/// through ``update(_:)``, which holds an exclusive lock on a lock file beside
/// it, so two writers never lose each other's edits; the process that owns the
/// data directory makes them all (other commands ask it), and each is announced
/// to ``changes``' subscribers. A change made by another hand (an editor, a tool
/// replacing the file) is announced once ``reread()`` is called: the agent does
/// so when the kernel tells it the file changed (``DirectoryWatch``).
final class StateFile<Value: Codable & Sendable & Equatable>: Sendable {
    /// The file.
    let path: String
    private let empty: Value
    private let cache = Locked<(stamp: FileStamp, value: Value)?>(nil)
    /// Told after each change this value writes.
    let changes = Broadcast<Void>(bufferingPolicy: .bufferingNewest(1))

    /// The file at `path`; `empty` is its value while it does not exist.
    init(path: String, empty: Value) {
        self.path = path
        self.empty = empty
    }

    /// The value now in the file.
    func load() throws(StateFileError) -> Value {
        let stamp = FileStamp(path: path)
        if let cached = cache.withLock({ $0 }), cached.stamp == stamp { return cached.value }
        guard let stamp else { return empty }
        let value: Value
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            value = try decoder.decode(Value.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch let error as DecodingError {
            throw .unreadable(path, "\(error)")
        } catch {
            throw .unreadable(path, DataDirectory.describe(error))
        }
        cache.withLock { $0 = (stamp, value) }
        return value
    }

    /// Reads the file afresh (another process may have written it) and tells
    /// ``changes``' subscribers if its value is not the one last read.
    func reread() {
        let before = cache.withLock { cached in
            defer { cached = nil }
            return cached?.value
        }
        let after = try? load()
        if before == nil || after != before { changes.yield(()) }
    }

    /// Reads the file, lets `change` edit its value and writes it back if it
    /// changed, all under the file's lock; returns what `change` returns. A change
    /// no subscriber acts on (a time noted for the record) need not be `announced`.
    @discardableResult
    func update<Result>(announced: Bool = true, _ change: (inout Value) throws -> Result) throws -> Result {
        try DataDirectory.create(DataDirectory.folder(of: path))
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw StateFileError.io(path + ".lock", errno) }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw StateFileError.io(path + ".lock", errno) }
        }
        // Read afresh under the lock: another process may have changed it within the stamp's resolution.
        cache.withLock { $0 = nil }
        let original = try load()
        var value = original
        let result = try change(&value)
        if value != original {
            try save(value)
            if announced { changes.yield(()) }
        }
        return result
    }

    private func save(_ value: Value) throws(StateFileError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let data: Data
        do { data = try encoder.encode(value) } catch { throw .unreadable(path, "\(error)") }
        try Self.writeAtomically(data, to: path, mode: 0o600)
        cache.withLock { $0 = FileStamp(path: path).map { ($0, value) } }
    }

    /// Writes `data` to a new file with `mode`, syncs it, and renames it over `path`.
    static func writeAtomically(_ data: Data, to path: String, mode: mode_t) throws(StateFileError) {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw .io(path, errno) }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, mode)
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw .io(path, code)
        }
    }
}

/// What identifies one version of a file: its inode, size and modification time.
struct FileStamp: Equatable, Sendable {
    let inode: UInt64
    let size: Int64
    let seconds: Int
    let nanoseconds: Int

    /// The stamp of the file at `path`, `nil` if there is none.
    init?(path: String) {
        guard let status = FileStatus(path: path) else { return nil }
        inode = status.inode
        size = status.size
        (seconds, nanoseconds) = status.modified
    }
}

/// A state file could not be read or written.
public enum StateFileError: Error, CustomStringConvertible {
    /// The file exists but does not hold what it should.
    case unreadable(String, String)
    /// A system call failed.
    case io(String, Int32)

    /// What went wrong, for people.
    public var description: String {
        switch self {
        case .unreadable(let path, let why): "cannot read \(path): \(why)"
        case .io(let path, let code): "cannot write \(path): \(String(cString: strerror(code)))"
        }
    }
}

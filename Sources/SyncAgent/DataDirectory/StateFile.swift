import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Locking
import Logging

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
///
/// A file that another hand left unreadable (cut short, not JSON) does not empty
/// the state: reads keep the value last read, the error is logged once and kept
/// in ``fault`` (shown by `syncd status`), and ``update(_:)`` refuses to write over
/// it. With no value read before, a read throws.
final class StateFile<Value: Codable & Sendable & Equatable>: Sendable {
    /// The file.
    let path: String
    private let empty: Value
    private let last = Locked<Reading?>(nil)
    /// Told after each change this value writes.
    let changes = Broadcast<Void>(bufferingPolicy: .bufferingNewest(1))
    private static var logger: Logger { Logger(label: "syncd.state") }

    /// What the file held when last read whole, and what became of it since.
    private struct Reading {
        /// The stamp of the file last read (`nil`: read it again).
        var stamp: FileStamp?
        /// Its value, or the one before if it could not be read.
        var value: Value
        /// Why the file could not be read, and which version of it.
        var fault: (error: StateFileError, stamp: FileStamp)?
    }

    /// The file at `path`; `empty` is its value while it does not exist.
    init(path: String, empty: Value) {
        self.path = path
        self.empty = empty
    }

    /// The value now in the file; the value last read if it has become unreadable.
    func load() throws(StateFileError) -> Value {
        guard let stamp = FileStamp(path: path) else {
            last.withLock { $0 = Reading(stamp: nil, value: empty) }
            return empty
        }
        if let last = last.withLock({ $0 }), last.stamp == stamp { return last.value }
        do {
            let value = try read()
            last.withLock { $0 = Reading(stamp: stamp, value: value) }
            return value
        } catch {
            // Logged by the one read that first finds this version broken (others may be reading it too).
            let (kept, first): (Value?, Bool) = last.withLock { last in
                guard var reading = last else { return (nil, false) }
                let first = reading.fault?.stamp != stamp
                reading.stamp = stamp
                reading.fault = (error, stamp)
                last = reading
                return (reading.value, first)
            }
            guard let kept else { throw error }
            if first { Self.logger.error("\(error); keeping what it held when last read until it is fixed") }
            return kept
        }
    }

    /// Why the file cannot be read now, if it cannot: its last readable value is in use meanwhile.
    /// Throws if it cannot be read and never could.
    func fault() throws(StateFileError) -> StateFileError? {
        _ = try load()
        return last.withLock { $0?.fault?.error }
    }

    /// The file's value, read and decoded now.
    private func read() throws(StateFileError) -> Value {
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(Value.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch let error as DecodingError {
            throw .unreadable(path, Self.describe(error))
        } catch {
            throw .unreadable(path, DataDirectory.describe(error))
        }
    }

    /// A decoding error in a line: what is wrong, and where.
    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty: "it is not JSON (cut short, or edited by hand)"
        case .dataCorrupted(let context): "\(context.debugDescription) at \(location(context.codingPath))"
        case .keyNotFound(let key, let context): "\(key.stringValue) is missing at \(location(context.codingPath))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            "\(context.debugDescription) at \(location(context.codingPath))"
        @unknown default: "\(error)"
        }
    }

    private static func location(_ keys: [any CodingKey]) -> String {
        keys.isEmpty ? "the top" : keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }

    /// Reads the file afresh (another process may have written it) and tells
    /// ``changes``' subscribers if its value is not the one last read.
    func reread() {
        let before = last.withLock { last in
            defer { last?.stamp = nil }
            return last?.value
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
        // Never the value last read in place of an unreadable file: that would overwrite someone's edit.
        let original = FileStamp(path: path) == nil ? empty : try read()
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
        last.withLock { $0 = Reading(stamp: FileStamp(path: path), value: value) }
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

import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Locking

/// The exclusive claim of one process on a data directory: the process that
/// serves it holds it, so a second listener or agent cannot write beside it.
///
/// The claim is an `flock` on `DIR/lock`, released by the kernel when the
/// process ends however it ends; the file holds the owner's process id for
/// the message the next claimant gets.
public final class DataDirectoryLock: Sendable {
    /// The data directory.
    public let directory: String
    private let descriptor: Locked<Int32>

    /// Claims `directory`, creating it (0700) if needed; throws
    /// ``DataDirectoryError/inUse(_:pid:)`` when another process holds it.
    public init(directory: String) throws(DataDirectoryError) {
        try DataDirectory.create(directory)
        let path = directory + "/lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(path, errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let owner = Self.owner(of: directory)
            close(fd)
            throw .inUse(directory, pid: owner)
        }
        ftruncate(fd, 0)
        let text = "\(getpid())\n"
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
        self.directory = directory
        self.descriptor = Locked(fd)
    }

    deinit { release() }

    /// Gives up the claim (also done when the lock goes away); another process may then claim the directory.
    public func release() {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    /// Whether some process holds `directory` now.
    public static func isHeld(_ directory: String) -> Bool {
        let fd = open(directory + "/lock", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return true }
        flock(fd, LOCK_UN)
        return false
    }

    /// The process id written by the holder, if readable.
    static func owner(of directory: String) -> Int32? {
        (try? String(contentsOfFile: directory + "/lock", encoding: .utf8))
            .flatMap { Int32($0.trimmingWhitespace(newlines: true)) }
    }
}

/// The data directory itself.
public enum DataDirectory {
    /// Creates `directory` (and its parents) private to this user (0700), as
    /// it holds documents, keys and password hashes.
    public static func create(_ directory: String) throws(DataDirectoryError) {
        guard mkdir(directory, 0o700) != 0 else { return }
        let code = errno
        if code == EEXIST, FileStatus(path: directory)?.isDirectory == true { return }
        guard code == ENOENT, folder(of: directory) != directory else { throw .io(directory, code) }
        try create(folder(of: directory))
        guard mkdir(directory, 0o700) != 0 else { return }
        let again = errno
        guard again == EEXIST, FileStatus(path: directory)?.isDirectory == true else { throw .io(directory, again) }
    }

    /// The folder `path` is in (`/` for a file at the root, `.` for a bare name).
    static func folder(of path: String) -> String {
        let trimmed = path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// The last part of `path`: a file's name.
    static func fileName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// Why reading or writing a file failed, for people: the system's reason when there
    /// is one (`No such file or directory`), the error as it describes itself otherwise.
    static func describe(_ error: any Error) -> String {
        if let error = error as? POSIXError { return String(cString: strerror(error.code.rawValue)) }
        guard let error = error as? CocoaError else { return "\(error)" }
        if let underlying = error.userInfo["NSUnderlyingError"] as? POSIXError {
            return String(cString: strerror(underlying.code.rawValue))
        }
        switch error.code {
        case .fileReadInapplicableStringEncoding, .fileReadUnknownStringEncoding: return "it is not UTF-8 text"
        case .fileReadNoSuchFile, .fileNoSuchFile: return String(cString: strerror(ENOENT))
        case .fileReadNoPermission, .fileWriteNoPermission: return String(cString: strerror(EACCES))
        default: return "file error \(error.code.rawValue)"
        }
    }
}

/// Why a data directory cannot be used.
public enum DataDirectoryError: Error, CustomStringConvertible {
    /// Another process serves it.
    case inUse(String, pid: Int32?)
    /// A system call failed.
    case io(String, Int32)

    /// What is wrong, for people.
    public var description: String {
        switch self {
        case .inUse(let directory, let pid):
            "another syncd\(pid.map { " (pid \($0))" } ?? "") is serving the data directory \(directory)"
        case .io(let path, let code): "cannot use \(path): \(String(cString: strerror(code)))"
        }
    }
}

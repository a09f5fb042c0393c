import Crypto
import Foundation
import Locking

/// The users who may log in to the listener, with salted password hashes,
/// kept in `users.json` in the data directory (mode 0600).
///
/// The file is re-read when it changes, so `syncd user add` takes effect on
/// a running listener. Verified passwords are remembered in memory (as a
/// keyed hash, never in clear) so repeated Basic authentication stays cheap.
public final class UserStore: Sendable {
    /// The file holding the users.
    public let path: String
    private struct State {
        var users: [String: PasswordHash] = [:]
        var modified: Date?
        /// HMAC of name and password for passwords already verified.
        var verified: Set<[UInt8]> = []
    }
    private let state = Locked(State())
    private let cacheKey = SymmetricKey(size: .bits256)
    private let iterations: Int

    /// The users of the data directory `directory`; new passwords are hashed
    /// with `iterations` rounds of PBKDF2 (fewer only for tests).
    public init(directory: String, iterations: Int = 200_000) {
        self.path = directory + "/users.json"
        self.iterations = max(1, iterations)
    }

    /// Whether `name` can be a user name: non-empty, no `:` (it separates name and password in Basic auth), no control characters.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 256 && !name.contains(":") && !name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// The user names, sorted.
    public func names() throws -> [String] {
        try load().keys.sorted()
    }

    /// Adds a user, or sets the password of an existing one.
    public func setPassword(_ password: String, for name: String) throws {
        guard Self.isValidName(name) else { throw UserStoreError.invalidName(name) }
        guard !password.isEmpty else { throw UserStoreError.emptyPassword }
        var users = try load()
        users[name] = PasswordHash(password: password, iterations: iterations)
        try save(users)
    }

    /// Removes a user; `false` if there was none.
    @discardableResult
    public func remove(_ name: String) throws -> Bool {
        var users = try load()
        guard users.removeValue(forKey: name) != nil else { return false }
        try save(users)
        return true
    }

    /// Whether `password` is the password of `name`.
    public func verify(name: String, password: String) -> Bool {
        guard let users = try? load(), let hash = users[name] else { return false }
        let token = Array(HMAC<SHA256>.authenticationCode(for: Array("\(name)\u{0}\(hash.salt)\u{0}\(password)".utf8), using: cacheKey))
        if state.withLock({ $0.verified.contains(token) }) { return true }
        guard hash.matches(password) else { return false }
        state.withLock { state in
            if state.verified.count > 1000 { state.verified.removeAll() }
            state.verified.insert(token)
        }
        return true
    }

    /// The salt of `name`'s password (session cookies are bound to it), if the user exists.
    func salt(of name: String) -> String? {
        (try? load())?[name]?.salt
    }

    private func load() throws -> [String: PasswordHash] {
        let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
        if let cached = state.withLock({ $0.modified == modified ? $0.users : nil }) { return cached }
        var users: [String: PasswordHash] = [:]
        if modified != nil {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            users = try JSONDecoder().decode(UserFile.self, from: data).users
        }
        state.withLock { state in
            state.users = users
            state.modified = modified
            state.verified.removeAll()
        }
        return users
    }

    private func save(_ users: [String: PasswordHash]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(UserFile(users: users))
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw UserStoreError.io(path, errno) }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        guard written == data.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw UserStoreError.io(path, errno)
        }
        state.withLock { $0.modified = nil }
    }

    private struct UserFile: Codable {
        var users: [String: PasswordHash]
    }
}

/// Why a user could not be added or removed.
public enum UserStoreError: Error, CustomStringConvertible {
    /// The name is empty, contains `:` or control characters.
    case invalidName(String)
    /// The password is empty.
    case emptyPassword
    /// The users file could not be written.
    case io(String, Int32)

    /// What is wrong, for people.
    public var description: String {
        switch self {
        case .invalidName(let name): "invalid user name \"\(name)\": it must be non-empty, without ':' or control characters"
        case .emptyPassword: "the password must not be empty"
        case .io(let path, let code): "cannot write \(path): \(String(cString: strerror(code)))"
        }
    }
}

import Crypto
import FoundationEssentials
import Locking
import NIOPosix
import Synchronization

/// A user who may log in to the listener: a salted password hash and roles.
/// A user with the role `_admin` is a server admin; other users reach the
/// databases whose `_security` names them or one of their roles.
public struct UserRecord: Sendable, Hashable, Codable {
    /// The password's salted hash.
    var password: PasswordHash
    /// The user's roles (`_admin` for a server admin).
    public var roles: [String]

    /// Whether the user is a server admin.
    public var isAdmin: Bool { roles.contains(UserStore.adminRole) }
}

/// The users who may log in to the listener, kept in `users.json` in the
/// data directory (mode 0600).
///
/// Changes are made by the process that owns the directory (see ``Node``):
/// `syncd user add` beside a running agent goes through its control socket. Password checks run PBKDF2 on a thread of their own,
/// never on the listener's event loops or Swift's cooperative threads, with a
/// bounded queue: a flood of wrong passwords is refused rather than allowed to
/// starve other clients. An unknown user costs exactly what a wrong password
/// costs, so the answer's timing does not tell which names exist. Verified
/// passwords are remembered (as a keyed hash, never in clear) so repeated
/// Basic authentication stays cheap.
public final class UserStore: Sendable {
    /// The role that makes a user a server admin.
    public static let adminRole = "_admin"
    /// The file holding the users.
    public var path: String { file.path }
    private struct File: Codable, Equatable {
        var users: [String: UserRecord] = [:]
    }
    private let file: StateFile<File>
    private let verified = Locked<Set<[UInt8]>>([])
    private let cacheKey = SymmetricKey(size: .bits256)
    private let iterations: Int
    /// Stands in for an unknown user's hash, so that checking one costs the same.
    private let decoy: PasswordHash
    private let hashing: NIOThreadPool
    /// The checks waiting for the hashing thread: in all, and from each address.
    private let waiting = Locked<(all: Int, from: [String: Int])>((0, [:]))
    /// Passwords hashed so far: every check not answered from the cache hashes exactly one.
    private let hashed = Atomic<Int>(0)
    var passwordsHashed: Int { hashed.load(ordering: .relaxed) }
    /// The most password checks waiting for the hashing thread.
    static let maximumWaiting = 16
    /// The most of them from one address: a guesser on a few addresses leaves the queue
    /// to others (a check waits behind at most this many per address sending them).
    static let maximumWaitingPerAddress = 2

    /// The users of the data directory `directory`; new passwords are hashed
    /// with `iterations` rounds of PBKDF2 (fewer only for tests).
    public init(directory: String, iterations: Int = PasswordHash.defaultIterations) {
        self.file = StateFile(path: directory + "/users.json", empty: File())
        self.iterations = max(1, iterations)
        self.decoy = PasswordHash(password: UUID().uuidString, iterations: max(1, iterations))
        self.hashing = NIOThreadPool(numberOfThreads: 1)
        hashing.start()
    }

    /// Tells of each change made through this store, after it is written.
    public func changes() -> AsyncStream<Void> { file.changes.subscribe() }

    /// Rereads the file, which another process may have replaced, telling ``changes()``'
    /// subscribers if the users are not those last read.
    func reread() { file.reread() }

    /// Why the file cannot be read now, if it cannot (the users last read are in use meanwhile);
    /// throws if it cannot be read and never could.
    func fault() throws(StateFileError) -> StateFileError? { try file.fault() }

    deinit { hashing.shutdownGracefully { _ in } }

    /// Whether `name` can be a user name: non-empty, no `:` (it separates name and password in Basic auth), no control characters.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 256 && !name.contains(":") && !name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// The user names, sorted.
    public func names() throws -> [String] {
        try file.load().users.keys.sorted()
    }

    /// The user called `name`, if any.
    public func user(_ name: String) -> UserRecord? {
        (try? file.load())?.users[name]
    }

    /// Adds a user, or sets the password of an existing one; `roles`, when
    /// given, replaces the user's roles (a new user without roles has none).
    public func setPassword(_ password: String, for name: String, roles: [String]? = nil) throws {
        guard Self.isValidName(name) else { throw UserStoreError.invalidName(name) }
        guard !password.isEmpty else { throw UserStoreError.emptyPassword }
        let hash = PasswordHash(password: password, iterations: iterations)
        try file.update { file in
            file.users[name] = UserRecord(password: hash, roles: roles ?? file.users[name]?.roles ?? [])
        }
        verified.withLock { $0.removeAll() }
    }

    /// Removes a user; `false` if there was none.
    @discardableResult
    public func remove(_ name: String) throws -> Bool {
        let removed = try file.update { $0.users.removeValue(forKey: name) != nil }
        verified.withLock { $0.removeAll() }
        return removed
    }

    /// The user if `password` is `name`'s password, else `nil`. Throws ``UserStoreError/busy``
    /// when too many checks are already waiting, or ``maximumWaitingPerAddress`` from `address`
    /// (the client's; `nil` for a check no client asked for).
    public func verify(name: String, password: String, from address: String? = nil) async throws(UserStoreError) -> UserRecord? {
        let record = user(name)
        let hash = record?.password ?? decoy
        let token = Array(HMAC<SHA256>.authenticationCode(for: Array("\(name)\u{0}\(hash.salt)\u{0}\(password)".utf8), using: cacheKey))
        if record != nil, verified.withLock({ $0.contains(token) }) { return record }
        let admitted = waiting.withLock { waiting in
            guard waiting.all < Self.maximumWaiting else { return false }
            if let address {
                guard waiting.from[address, default: 0] < Self.maximumWaitingPerAddress else { return false }
                waiting.from[address, default: 0] += 1
            }
            waiting.all += 1
            return true
        }
        guard admitted else { throw .busy }
        defer {
            waiting.withLock { waiting in
                waiting.all -= 1
                if let address { waiting.from[address] = waiting.from[address].flatMap { $0 > 1 ? $0 - 1 : nil } }
            }
        }
        let matches: Bool
        do {
            matches = try await hashing.runIfActive {
                self.hashed.add(1, ordering: .relaxed)
                return hash.matches(password)
            }
        } catch {
            throw .busy
        }
        guard matches, let record else { return nil }
        verified.withLock { verified in
            if verified.count > 1000 { verified.removeAll() }
            verified.insert(token)
        }
        return record
    }

    /// The salt of `name`'s password (session cookies are bound to it), if the user exists.
    func salt(of name: String) -> String? {
        user(name)?.password.salt
    }
}

/// Why a user could not be added, removed or checked.
public enum UserStoreError: Error, CustomStringConvertible {
    /// The name is empty, contains `:` or control characters.
    case invalidName(String)
    /// The password is empty.
    case emptyPassword
    /// Too many password checks are waiting; the client should retry later.
    case busy

    /// What is wrong, for people.
    public var description: String {
        switch self {
        case .invalidName(let name): "invalid user name \"\(name)\": it must be non-empty, without ':' or control characters"
        case .emptyPassword: "the password must not be empty"
        case .busy: "too many password checks are waiting; retry later"
        }
    }
}

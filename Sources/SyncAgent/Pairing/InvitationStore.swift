import Crypto
import FoundationEssentials
import Locking
import Store

/// A one-time pairing invitation as the inviting node keeps it: never the
/// secret itself, only its SHA-256.
public struct Invitation: Sendable, Hashable, Codable {
    /// A short handle for people (`syncd pair --cancel ID`), not secret.
    public var handle: String
    /// SHA-256 of the secret, hex.
    var secretHash: String
    /// The databases the invitation shares.
    public var databases: [String]
    /// When it was made.
    public var created: Date
    /// When it stops being accepted.
    public var expires: Date
    /// When it was used, and by which peer's UUID.
    public var spent: Date?
    public var spentBy: String?
    /// Whether it was cancelled.
    public var cancelled: Bool
    /// Whether the pairing it makes is kept out of introductions (`syncd pair --no-introduce`).
    var isPrivate: Bool?

    /// Whether the pairing it makes takes part in introductions.
    public var introduce: Bool { isPrivate != true }

    enum CodingKeys: String, CodingKey {
        case handle, databases, created, expires, spent, cancelled
        case isPrivate = "private"
        case secretHash = "secret_sha256"
        case spentBy = "spent_by"
    }

    /// Whether it can still be used at `date`.
    public func isOpen(at date: Date = Date()) -> Bool { spent == nil && !cancelled && date < expires }
}

/// The invitations of a data directory, kept in `invitations.json` (mode
/// 0600), shared by the process that made them and the listener that accepts
/// them. Used, cancelled and expired invitations are kept for a day so that a
/// late joiner is told what happened to the one it holds.
public final class InvitationStore: Sendable {
    private struct File: Codable, Equatable {
        var invitations: [Invitation] = []
    }
    private let file: StateFile<File>
    /// The time, for making, using and cancelling invitations (a test's clock in tests).
    private let now: @Sendable () -> Date

    /// The invitations of the data directory `directory`, made and checked at the times `now` tells.
    public init(directory: String, now: @escaping @Sendable () -> Date = { Date() }) {
        file = StateFile(path: directory + "/invitations.json", empty: File())
        self.now = now
    }

    /// Tells of each change made through this store (made, used, reopened, cancelled),
    /// after it is written: what a wait for an invitation wakes on.
    public func changes() -> AsyncStream<Void> { file.changes.subscribe() }

    /// The file holding the invitations.
    var path: String { file.path }

    /// Rereads the file, which another process may have replaced, telling ``changes()``'
    /// subscribers if the invitations are not those last read.
    func reread() { file.reread() }

    /// Why the file cannot be read now, if it cannot (the invitations last read are in use meanwhile);
    /// throws if it cannot be read and never could.
    func fault() throws(StateFileError) -> StateFileError? { try file.fault() }

    /// Makes an invitation to the databases, valid for `lifetime`, and returns it with its secret
    /// (128 random bits, base32), which is shown once and kept nowhere.
    public func create(databases: [String], lifetime: Duration, introduce: Bool = true) throws -> (invitation: Invitation, secret: String) {
        let secret = Base32.encode((0..<16).map { _ in UInt8.random(in: .min ... .max) }).lowercased()
        let now = self.now()
        let invitation = Invitation(
            handle: Hex.string((0..<4).map { _ in UInt8.random(in: .min ... .max) }),
            secretHash: Self.hash(secret), databases: databases, created: now,
            expires: now.addingTimeInterval(Double(lifetime.components.seconds)), cancelled: false,
            isPrivate: introduce ? nil : true)
        try file.update { file in
            file.invitations.removeAll { now.timeIntervalSince($0.expires) > 86_400 }
            file.invitations.append(invitation)
        }
        return (invitation, secret)
    }

    /// Uses the invitation whose secret is `secret` for the peer `uuid`:
    /// it is spent from now on. Throws why it cannot be used.
    func redeem(secret: String, by uuid: String) throws(PairingError) -> Invitation {
        let hash = Self.hash(secret)
        let now = self.now()
        let outcome: Result<Invitation, PairingError>
        do {
            outcome = try file.update { file in
                guard let index = file.invitations.firstIndex(where: { $0.secretHash == hash }) else {
                    return .failure(.invitationRefused("no such invitation: the secret is wrong"))
                }
                let invitation = file.invitations[index]
                if invitation.cancelled { return .failure(.invitationRefused("the invitation was cancelled")) }
                if invitation.spent != nil { return .failure(.invitationRefused("the invitation was already used")) }
                if now >= invitation.expires { return .failure(.invitationRefused("the invitation expired")) }
                file.invitations[index].spent = now
                file.invitations[index].spentBy = uuid
                return .success(file.invitations[index])
            }
        } catch {
            throw .internal("the invitations cannot be read or written: \(error)")
        }
        return try outcome.get()
    }

    /// Makes the invitation `handle`, spent by `uuid` in a pairing that then failed, open again,
    /// so that nothing is paired and nothing is used up.
    func reopen(handle: String, spentBy uuid: String) throws {
        try file.update { file in
            for index in file.invitations.indices
            where file.invitations[index].handle == handle && file.invitations[index].spentBy == uuid {
                file.invitations[index].spent = nil
                file.invitations[index].spentBy = nil
            }
        }
    }

    /// Cancels the open invitations (only the one with `handle`, if given); returns how many.
    @discardableResult
    public func cancel(handle: String? = nil) throws -> Int {
        let now = self.now()
        return try file.update { file in
            var count = 0
            for index in file.invitations.indices where file.invitations[index].isOpen(at: now)
                && (handle == nil || file.invitations[index].handle == handle) {
                file.invitations[index].cancelled = true
                count += 1
            }
            return count
        }
    }

    /// The invitation with `handle`, as it stands now.
    public func invitation(handle: String) throws -> Invitation? {
        try file.load().invitations.first { $0.handle == handle }
    }

    /// Every invitation kept.
    public func all() throws -> [Invitation] {
        try file.load().invitations
    }

    private static func hash(_ secret: String) -> String {
        Hex.string(SHA256.hash(data: Array(secret.lowercased().utf8)))
    }
}

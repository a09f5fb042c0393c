import Crypto
import Store

/// The name of a replication's checkpoints: `_local/<id>` on both sides.
///
/// It is the SHA-256 of what makes two replications the same one: the local
/// database's UUID, the remote database's stable identity, the direction, the
/// filter, and whether only first-hand changes are read. Never the URL, host or
/// port, so a peer found at a new address resumes where it left off. Like CouchDB,
/// `continuous` is left out: a one-shot and a continuous run of the same
/// replication share checkpoints.
public struct ReplicationID: Sendable, Hashable, CustomStringConvertible {
    /// Which way documents flow, seen from the local database.
    public enum Direction: String, Sendable, Hashable {
        /// Local to remote.
        case push
        /// Remote to local.
        case pull
    }

    /// Bumped when the recipe changes, so old checkpoints are not misread.
    public static let version = 1

    /// The id, 64 lower-case hex digits.
    public let value: String

    /// The id of a replication between the local database `local` and the remote
    /// database `remote` (both as ``Endpoint/identity()`` gives them); `firstHandOnly`:
    /// it reads first-hand changes only (a recipe of its own; other replications' ids are as before).
    /// `filterCode`: the source of a filter function, as CouchDB's replication ids include it,
    /// so a changed function starts a new checkpoint.
    public init(local: String, remote: String, direction: Direction, filter: ReplicationFilter?, firstHandOnly: Bool = false,
                filterCode: String? = nil) {
        var parts = ["syncd-replication-v\(Self.version)", local, remote, direction.rawValue, filter?.canonicalForm ?? ""]
        if firstHandOnly { parts.append("first-hand") }
        if let filterCode { parts.append("code:" + filterCode) }
        let recipe = parts.joined(separator: "\n")
        value = Hex.string(SHA256.hash(data: Array(recipe.utf8)))
    }

    /// The id for a source and a target: the local side is the source for a push,
    /// the target otherwise (between two local or two remote databases, the source
    /// counts as local).
    public init(sourceIdentity: String, targetIdentity: String, sourceIsLocal: Bool, targetIsLocal: Bool, filter: ReplicationFilter?,
                firstHandOnly: Bool = false, filterCode: String? = nil) {
        if !sourceIsLocal && targetIsLocal {
            self.init(local: targetIdentity, remote: sourceIdentity, direction: .pull, filter: filter, firstHandOnly: firstHandOnly,
                      filterCode: filterCode)
        } else {
            self.init(local: sourceIdentity, remote: targetIdentity, direction: .push, filter: filter, firstHandOnly: firstHandOnly,
                      filterCode: filterCode)
        }
    }

    /// The hex id.
    public var description: String { value }
}

import FoundationEssentials

/// What a running agent reports through its control socket (`GET /_syncd/status`)
/// and `syncd status --json` prints: a stable JSON document whose keys are
/// documented in the README. Dates are ISO 8601; absent values are omitted.
public struct AgentStatus: Sendable, Codable, Equatable {
    /// The node itself.
    public var node: Node
    /// Whether discovery works.
    public var discovery: Discovery
    /// The group's members: the peers paired with here, and those they introduced.
    public var peers: [Peer]
    /// Every replication the agent runs (with peers and configured remotes).
    public var replications: [Replication]
    /// The databases in the data directory.
    public var databases: [Database]
    /// The data directory's state files (users, peers, invitations) that cannot be read now,
    /// each with why: the agent goes on with what each held when last read. Absent when none.
    public var unreadableFiles: [String]? = nil

    enum CodingKeys: String, CodingKey {
        case node, discovery, peers, replications, databases
        case unreadableFiles = "unreadable_files"
    }

    /// The node: who it is, where it listens, since when.
    public struct Node: Sendable, Codable, Equatable {
        public var name: String
        public var uuid: String
        public var id: String
        public var urls: [String]
        public var version: String
        public var started: Date
        public var dataDirectory: String
        enum CodingKeys: String, CodingKey {
            case name, uuid, id, urls, version, started
            case dataDirectory = "data_directory"
        }
    }

    /// Discovery: `running`, `disabled` or `unavailable` (with the reason).
    public struct Discovery: Sendable, Codable, Equatable {
        public var state: String
        public var reason: String?
    }

    /// A paired peer as the agent sees it now.
    public struct Peer: Sendable, Codable, Equatable {
        public var name: String
        public var id: String
        public var uuid: String
        public var pairedAt: Date
        /// `online` (reached now), `connecting` or `offline`.
        public var state: String
        /// The address in use, when online.
        public var address: String?
        /// Why it is offline, in plain words.
        public var reason: String?
        /// When it last made a request here or answered one.
        public var lastSeen: Date?
        public var databases: [String]
        /// The names of the members that introduced it; absent for a peer paired with here directly.
        public var introducedBy: [String]?
        enum CodingKeys: String, CodingKey {
            case name, id, uuid, state, address, reason, databases
            case pairedAt = "paired_at"
            case lastSeen = "last_seen"
            case introducedBy = "introduced_by"
        }
    }

    /// One replication.
    public struct Replication: Sendable, Codable, Equatable {
        public var database: String
        /// The peer's name, or the remote's URL (without credentials).
        public var with: String
        /// `pull` or `push`.
        public var direction: String
        /// `active`, `idle`, `offline` or `stopped`.
        public var state: String
        public var docsRead: Int
        public var docsWritten: Int
        public var docWriteFailures: Int
        public var changesPending: Int?
        public var checkpointedSeq: String?
        public var lastError: String?
        /// A pull from a group member: `whole` when it reads every change the member has,
        /// `first_hand` when only those that entered the group there (other members' whole
        /// feeds carry the rest); left out for a remote.
        public var feed: String? = nil
        enum CodingKeys: String, CodingKey {
            case database, with, direction, state, feed
            case docsRead = "docs_read"
            case docsWritten = "docs_written"
            case docWriteFailures = "doc_write_failures"
            case changesPending = "changes_pending"
            case checkpointedSeq = "checkpointed_seq"
            case lastError = "last_error"
        }
    }

    /// One database.
    public struct Database: Sendable, Codable, Equatable {
        public var name: String
        public var docCount: Int
        public var docDelCount: Int
        public var updateSeq: String
        public var sizeOnDisk: Int
        /// Bytes free on the file system holding it.
        public var diskFree: Int?
        /// The names of the members it is shared with.
        public var sharedWith: [String]?
        enum CodingKeys: String, CodingKey {
            case name
            case sharedWith = "shared_with"
            case docCount = "doc_count"
            case docDelCount = "doc_del_count"
            case updateSeq = "update_seq"
            case sizeOnDisk = "size_on_disk"
            case diskFree = "disk_free"
        }
    }

    /// What needs attention, one plain sentence each; empty when all is well.
    /// `syncd status` exits 1 when this is not empty.
    public var problems: [String] {
        var problems: [String] = []
        for file in unreadableFiles ?? [] { problems.append("\(file); what it last held is in use") }
        if discovery.state == "unavailable" { problems.append("discovery is unavailable: \(discovery.reason ?? "unknown reason")") }
        for peer in peers where peer.state == "offline" {
            problems.append("peer \(peer.name) is offline" + (peer.reason.map { ": \($0)" } ?? ""))
        }
        for replication in replications where replication.state == "stopped" && replication.lastError != nil {
            problems.append("\(replication.direction) of \(replication.database) with \(replication.with) failed: \(replication.lastError!)")
        }
        for database in databases {
            if let free = database.diskFree, free < 1 << 30 {
                problems.append("database \(database.name): only \(free >> 20) MiB left on its disk")
            }
        }
        return problems
    }

    /// The encoder for the document: sorted keys, ISO 8601 dates.
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    /// The decoder matching ``encoder``.
    public static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

extension AgentStatus.Peer {
    /// Whether `text` names this peer, by the rule `syncd peers remove` uses (``PeerStore/matches(_:_:)``).
    public func isNamed(by text: String) -> Bool {
        NodeID(id).map { PeerStore.matches(id: $0, uuid: uuid, name: name, text) } ?? false
    }
}

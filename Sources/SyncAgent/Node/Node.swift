import FoundationEssentials
import Logging
import QueryServer
import Store

/// One syncd node: its claimed data directory and everything kept there.
///
/// The node owns the directory's lock (no other process writes beside it), its
/// databases, its identity and name, the users who may log in, the paired
/// peers, the pairing invitations, what is shared with whom, and the
/// replications running. The listener serves a node; the agent runs one;
/// the commands claim one when no agent runs (see ``NodeAccess``).
public final class Node: Sendable {
    /// The exclusive claim on the directory.
    public let lock: DataDirectoryLock
    /// The databases.
    public let catalog: Catalog
    /// The node's UUID, key and certificate.
    public let identity: NodeIdentity
    /// The name this node gives itself to peers, recorded beside its identity.
    public let name: String
    /// Who may log in.
    public let users: UserStore
    /// The group: the peers paired with here, and the members they introduced.
    public let peers: PeerStore
    /// The pairing invitations this node made.
    public let invitations: InvitationStore
    /// What peers may replicate beyond their pairings, and with which push filters.
    public let sharing: PeerSharing
    /// The replications running in this process, served at `/_active_tasks` and `/_scheduler/*`.
    public let activeTasks: ActiveTasks
    /// The processes design documents' JavaScript runs in (`validate_doc_update` on every write).
    public let queryServers: QueryServers

    /// The data directory.
    public var directory: String { lock.directory }

    /// Claims `directory` (throws ``DataDirectoryError/inUse(_:pid:)`` if another process holds it)
    /// and opens what it keeps, making the identity on first use. `name`, when given, is recorded
    /// as the node's; otherwise the recorded one (else the host name) is used. `users` replaces
    /// the directory's user store (tests hash with fewer rounds); `now` is the invitations' clock
    /// (tests set it). The store's commits are timed into ``SyncdMetrics``. `maximumDocumentSize` is
    /// CouchDB's `max_document_size`: the largest document body, without its attachments, that any
    /// write takes (a client's through the listener, a remote's through replication); 413 beyond.
    public init(directory: String, name: String? = nil, users: UserStore? = nil, now: (@Sendable () -> Date)? = nil,
                activeTasks: ActiveTasks = ActiveTasks(), maximumDocumentSize: Int = Node.defaultMaximumDocumentSize,
                logger: Logger = Logger(label: "syncd.node")) throws {
        lock = try DataDirectoryLock(directory: directory)
        var options = Database.Options()
        options.commitObserver = SyncdMetrics.storeCommitObserver
        options.maximumDocumentSize = maximumDocumentSize
        queryServers = QueryServers(executable: QueryServers.syncdExecutable, logger: logger)
        options.designFunctions = JavaScriptDesignFunctions(servers: queryServers)
        catalog = try Catalog(directory: directory, options: options)
        identity = try NodeIdentity.loadOrCreate(in: directory)
        if let name {
            do { try NodeName.record(name, in: directory) } catch {
                logger.warning("cannot record the node's name in the data directory", metadata: ["error": "\(error)"])
            }
        }
        self.name = name ?? NodeName.of(directory: directory)
        self.users = users ?? UserStore(directory: directory)
        let sharing = PeerSharing()
        self.sharing = sharing
        peers = PeerStore(directory: directory, ownID: identity.id, ownUUID: identity.uuid, sharing: sharing)
        invitations = now.map { InvitationStore(directory: directory, now: $0) } ?? InvitationStore(directory: directory)
        self.activeTasks = activeTasks
    }

    /// The files of users, peers and invitations that cannot be read now, each with why: what each
    /// held when last read stays in use, so a hand edit that breaks one does not make strangers of
    /// the peers. Throws if one cannot be read and never could in this process.
    public func stateFaults() throws(StateFileError) -> [StateFileError] {
        try [users.fault(), peers.fault(), invitations.fault()].compactMap { $0 }
    }

    /// CouchDB's default `max_document_size`: 8,000,000 bytes.
    public static let defaultMaximumDocumentSize = Database.Options().maximumDocumentSize

    /// Until cancelled: when another hand writes, replaces or deletes the users, peers or
    /// invitations file (an editor, a tool), the store rereads it and tells its subscribers
    /// at once, as it does of its own changes: the agent reconciles its peers, the listener
    /// closes a revoked peer's connections. The kernel tells of each change (inotify); if it
    /// will not, the files are still reread when next read, and only the subscribers miss it.
    public func followDirectory(logger: Logger) async {
        let rereads: [String: @Sendable () -> Void] = [
            DataDirectory.fileName(users.path): users.reread,
            DataDirectory.fileName(peers.path): peers.reread,
            DataDirectory.fileName(invitations.path): invitations.reread,
        ]
        let changes: AsyncStream<String?>
        do {
            changes = try DirectoryWatch.changes(of: directory)
        } catch {
            logger.warning("changes to \(directory) made by other processes are not followed: \(error)")
            return
        }
        for await name in changes {
            if let name { rereads[name]?() } else { rereads.values.forEach { $0() } }
        }
    }

    /// Closes the databases and gives up the directory.
    public func close() {
        catalog.close()
        queryServers.shutdown()
        lock.release()
    }
}

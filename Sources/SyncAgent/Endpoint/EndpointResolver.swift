import FoundationEssentials
import Locking
import Logging
import Store

/// Turns the sides of a replication as a person names them (a database name
/// or an http(s) URL) into endpoints: URLs with the trust asked for, names
/// from the data directory. A data directory that a running agent owns is
/// reached through the agent's control socket, never opened beside it; one
/// that no process owns is claimed for as long as the endpoints are used.
public final class EndpointResolver: Sendable {
    /// How remote sides are trusted.
    public struct RemoteTrust: Sendable {
        /// A paired peer and this node's identity: pinned certificate, checkpoints keyed by its UUID, mutual TLS.
        public var peer: (peer: PairedPeer, identity: NodeIdentity)?
        /// Trust an HTTPS side only with this certificate fingerprint.
        public var fingerprint: String?
        /// The remote node's UUID, when known.
        public var peerUUID: String?

        /// System trust.
        public init(peer: (peer: PairedPeer, identity: NodeIdentity)? = nil, fingerprint: String? = nil, peerUUID: String? = nil) {
            self.peer = peer
            self.fingerprint = fingerprint
            self.peerUUID = peerUUID
        }
    }

    private let directory: String
    private let controlSocket: String
    private let trust: RemoteTrust
    private let logger: Logger
    private let opened = Locked<(node: NodeAccess?, remotes: [RemoteEndpoint])>((nil, []))

    /// A resolver for names in `directory`, whose agent (if one runs) listens on `controlSocket`.
    public init(directory: String, controlSocket: String, trust: RemoteTrust = RemoteTrust(), logger: Logger) {
        self.directory = directory
        self.controlSocket = controlSocket
        self.trust = trust
        self.logger = logger
    }

    /// Whether `side` is a URL rather than a database name.
    public static func isURL(_ side: String) -> Bool {
        side.lowercased().hasPrefix("http://") || side.lowercased().hasPrefix("https://")
    }

    /// The endpoint for `side`; a local target is created when missing, a local source must exist.
    public func endpoint(_ side: String, isTarget: Bool) throws -> any Endpoint {
        if Self.isURL(side) {
            let pinned = trust.peer?.peer.id.fingerprint ?? trust.fingerprint
            return remote(RemoteEndpoint.Configuration(
                url: try RemoteURL(side), trust: pinned.map { .fingerprint($0) } ?? .system,
                peerUUID: trust.peer?.peer.uuid ?? trust.peerUUID, clientIdentity: trust.peer?.identity))
        }
        guard Catalog.isValidName(side) else {
            throw ResolverError("'\(RemoteURL.redact(side))' is neither an http(s) URL nor a valid database name")
        }
        if let catalog = try localCatalog() {
            guard isTarget || catalog.exists(side) else {
                throw ResolverError("the source database '\(side)' does not exist in \(directory)")
            }
            return LocalEndpoint(isTarget ? try catalog.openOrCreate(side) : try catalog.database(side))
        }
        // An agent owns the directory: its listener does the reading and writing.
        return remote(RemoteEndpoint.Configuration(url: RemoteURL(unixSocket: controlSocket, database: side)))
    }

    /// Closes the remote endpoints' connections and the databases, and gives up the directory.
    public func close() async {
        let (remotes, node) = opened.withLock { state in
            defer { state = (nil, []) }
            return (state.remotes, state.node)
        }
        for remote in remotes { await remote.shutdown() }
        node?.close()
    }

    private func remote(_ configuration: RemoteEndpoint.Configuration) -> RemoteEndpoint {
        let endpoint = RemoteEndpoint(configuration, logger: logger)
        opened.withLock { $0.remotes.append(endpoint) }
        return endpoint
    }

    /// The data directory's catalog, claimed for this process; `nil` when a running agent owns it.
    private func localCatalog() throws -> Catalog? {
        let node = try opened.withLock { state in
            if state.node == nil { state.node = try NodeAccess.open(directory: directory, controlSocket: controlSocket, logger: logger) }
            return state.node
        }
        guard case .claimed(let claimed) = node else { return nil }
        return claimed.catalog
    }
}

/// A side of a replication that cannot be used, said plainly.
public struct ResolverError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}

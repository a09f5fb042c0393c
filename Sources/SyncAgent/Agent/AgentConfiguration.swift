import Discovery
import FoundationEssentials
import Store

/// What `syncd agent` does, as its configuration file (`syncd.toml`) says:
/// the node's name, where it listens, how it is found, which databases it
/// shares with its peers and with what filters, where peers may be reached
/// without discovery, and which CouchDB servers it replicates with.
///
/// Every key is optional; an empty file is a working agent. See
/// ``AgentConfiguration/init(toml:)`` for the format.
public struct AgentConfiguration: Sendable, Equatable {
    /// The name shown to peers; `nil` uses the host name.
    public var name: String?
    /// The address the listener binds (`::` is every address, IPv4 too).
    public var listenHost = "::"
    /// The listener's TCP port; 0 picks a free one.
    public var listenPort = AgentConfiguration.defaultPort
    /// The listener's deadlines and connection budgets.
    public var listenerLimits = ListenerLimits()
    /// The largest JSON request body the listener takes, in bytes (`[listener] max_request_size`).
    public var maximumRequestSize = ListenerConfiguration().maximumRequestSize
    /// The largest attachment the listener takes, in bytes (`[listener] max_attachment_size`).
    public var maximumAttachmentSize = ListenerConfiguration().maximumAttachmentSize
    /// CouchDB's `max_document_size`: the largest document body, without attachments, that the
    /// node's databases take from anyone, peers and remotes included (`[node] max_document_size`).
    public var maximumDocumentSize = Node.defaultMaximumDocumentSize
    /// Advertise and browse with Avahi.
    public var discovery = true
    /// The DNS-SD service type advertised and browsed.
    public var serviceType = ServiceType.syncd
    /// The databases shared with every paired peer, with their filters
    /// (unless configured: `syncd`, the database `syncd pair` shares by default).
    public var databases = [SharedDatabase(name: "syncd")]
    /// Addresses to try for paired peers besides those discovery finds.
    public var peers: [PeerAddresses] = []
    /// CouchDB servers (or any CouchDB-protocol endpoint) replicated with both ways.
    public var remotes: [RemoteDatabase] = []

    /// The listener's port unless configured: CouchDB's HTTPS port.
    public static let defaultPort = 6984

    /// The defaults: listen on every address at 6984, discovery on, nothing shared beyond pairings.
    public init() {}

    /// A database shared with peers, and which of its documents cross.
    public struct SharedDatabase: Sendable, Equatable {
        /// The database's name.
        public var name: String
        /// What this node offers its peers (applied by this node's listener to the peers' feeds).
        public var pushFilter: ReplicationFilter?
        /// What this node takes from its peers (sent with this node's pull requests).
        public var pullFilter: ReplicationFilter?
        /// Filters for one peer that replace the database's own.
        public var peerFilters: [PeerFilters] = []
        /// Whether members introduce each other for this database (`introduce = false`: only
        /// peers paired directly share it).
        public var introduce = true

        /// A shared database without filters.
        public init(name: String, pushFilter: ReplicationFilter? = nil, pullFilter: ReplicationFilter? = nil) {
            self.name = name
            self.pushFilter = pushFilter
            self.pullFilter = pullFilter
        }

        /// The push filter for the peer `peer` (its ID or name).
        public func pushFilter(for peer: PairedPeer) -> ReplicationFilter? {
            peerFilters.first { $0.matches(peer) }.map(\.pushFilter) ?? pushFilter
        }

        /// The pull filter for the peer `peer`.
        public func pullFilter(for peer: PairedPeer) -> ReplicationFilter? {
            peerFilters.first { $0.matches(peer) }.map(\.pullFilter) ?? pullFilter
        }
    }

    /// One peer's own filters for a database.
    public struct PeerFilters: Sendable, Equatable {
        /// The peer: its ID (or a prefix of it) or its name.
        public var peer: String
        /// What this node offers that peer; `nil` offers everything.
        public var pushFilter: ReplicationFilter?
        /// What this node takes from that peer; `nil` takes everything.
        public var pullFilter: ReplicationFilter?

        /// Filters for the peer named `peer`.
        public init(peer: String, pushFilter: ReplicationFilter? = nil, pullFilter: ReplicationFilter? = nil) {
            self.peer = peer
            self.pushFilter = pushFilter
            self.pullFilter = pullFilter
        }

        /// Whether `paired` is the peer named.
        public func matches(_ paired: PairedPeer) -> Bool { PeerStore.matches(paired, peer) }
    }

    /// Addresses where a paired peer can be reached without discovery.
    public struct PeerAddresses: Sendable, Equatable {
        /// The peer: its ID (or a prefix of it) or its name.
        public var peer: String
        /// `host:port` addresses (IPv6 in brackets).
        public var addresses: [String]

        /// The addresses of the peer named `peer`.
        public init(peer: String, addresses: [String]) {
            self.peer = peer
            self.addresses = addresses
        }
    }

    /// A database on a CouchDB server, replicated with continuously both ways.
    public struct RemoteDatabase: Sendable, Hashable {
        /// The remote database's URL, without credentials.
        public var url: String
        /// The local database it is kept the same as.
        public var database: String
        /// A file holding `user:password` for the server (mode 0600), if it needs them.
        public var credentialsFile: String?

        /// The remote database at `url`, kept the same as the local `database`.
        public init(url: String, database: String, credentialsFile: String? = nil) {
            self.url = url
            self.database = database
            self.credentialsFile = credentialsFile
        }
    }

    /// The configured database `name`, if any.
    public func database(_ name: String) -> SharedDatabase? {
        databases.first { $0.name == name }
    }
}

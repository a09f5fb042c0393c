import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Store

/// A configured remote database (Apache CouchDB, or any CouchDB-protocol
/// endpoint) kept the same as a local one: a continuous pull and a continuous
/// push, with the database's configured filters. A CouchDB server does not
/// pull from us, so unlike with peers, this node drives both directions.
final class RemoteLink: Sendable {
    /// Remote to local.
    let pull: Replicator
    /// Local to remote.
    let push: Replicator
    private let endpoints: [RemoteEndpoint]

    /// The link for `remote`; its credentials are read from its `credentials_file` now.
    /// `claims`: the pulls into `database` share them.
    init(_ remote: AgentConfiguration.RemoteDatabase, database: Database, filters: AgentConfiguration.SharedDatabase?,
         claims: RevisionClaims, logger: Logger) throws {
        var url = try RemoteURL(remote.url)
        if let file = remote.credentialsFile {
            url = try Self.url(remote.url, credentialsFrom: file)
        }
        var configuration = RemoteEndpoint.Configuration(url: url)
        configuration.maximumDocumentSize = database.maximumDocumentSize
        let endpoints = [RemoteEndpoint(configuration, logger: logger), RemoteEndpoint(configuration, logger: logger)]
        var pulling = ReplicationConfiguration(source: endpoints[0], target: LocalEndpoint(database))
        pulling.filter = filters?.pullFilter
        pulling.claims = claims
        var pushing = ReplicationConfiguration(source: LocalEndpoint(database), target: endpoints[1])
        pushing.filter = filters?.pushFilter
        pushing.createTarget = true
        pulling.continuous = true
        pushing.continuous = true
        pulling.onIdle = MemoryTrim.shared.request
        pushing.onIdle = MemoryTrim.shared.request
        pulling.priority = .utility
        pushing.priority = .utility
        pull = Replicator(pulling, logger: logger)
        push = Replicator(pushing, logger: logger)
        self.endpoints = endpoints
    }

    /// Starts both directions.
    func start() {
        pull.start()
        push.start()
    }

    /// Stops both (they checkpoint) and closes the connections.
    func stop() async {
        async let pulled: Void = pull.stop()
        async let pushed: Void = push.stop()
        _ = await (pulled, pushed)
        for endpoint in endpoints { await endpoint.shutdown() }
    }

    /// `text` with the `user:password` of the file `path` as its user information.
    static func url(_ text: String, credentialsFrom path: String) throws -> RemoteURL {
        if let status = FileStatus(path: path), status.permissions & 0o007 != 0 {
            throw ConfigurationError("the credentials file \(path) may be read by every user: chmod o-rwx it")
        }
        let content: String
        do {
            content = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError("cannot read the credentials file \(path): \(DataDirectory.describe(error))")
        }
        let line = content.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        guard let colon = line.firstIndex(of: ":"), var components = URLComponents(string: text) else {
            throw ConfigurationError("the credentials file \(path) must hold user:password")
        }
        components.user = String(line[..<colon])
        components.password = String(line[line.index(after: colon)...])
        guard let withCredentials = components.string else {
            throw ConfigurationError("the credentials file \(path) must hold user:password")
        }
        return try RemoteURL(withCredentials)
    }
}

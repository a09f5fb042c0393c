import Discovery
import FoundationEssentials
import JSON
import Store
import TOMLKit

/// A configuration file that cannot be used, naming the key at fault.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file, when read from one.
    public var path: String?
    /// What is wrong, naming the key.
    public var message: String

    /// An error about `message`.
    public init(_ message: String, path: String? = nil) {
        self.message = message
        self.path = path
    }

    /// `PATH: message`.
    public var description: String { (path.map { $0 + ": " } ?? "") + message }
}

extension AgentConfiguration {
    /// Reads the configuration file at `path`; a missing file is the defaults.
    public static func load(path: String) throws(ConfigurationError) -> AgentConfiguration {
        guard FileManager.default.fileExists(atPath: path) else { return AgentConfiguration() }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError("cannot read the file: \(DataDirectory.describe(error))", path: path)
        }
        do {
            return try AgentConfiguration(toml: text)
        } catch {
            throw ConfigurationError(error.message, path: path)
        }
    }

    /// Reads a configuration in TOML:
    ///
    /// ```toml
    /// [node]
    /// name = "kitchen"
    /// max_document_size = 8000000    # bytes: a document's JSON without its attachments
    /// [listener]
    /// host = "::"
    /// port = 6984
    /// max_request_size = 67108864    # bytes; also max_attachment_size
    /// handshake_timeout = 5          # seconds; also request_head_timeout, idle_timeout
    /// max_connections = 1000         # also max_connections_per_client,
    ///                                # max_pending_connections, max_feeds_per_client
    /// [discovery]
    /// enabled = true
    /// service_type = "_syncd._tcp"
    /// [[database]]
    /// name = "notes"
    /// push_filter = { selector = { type = "note" } }
    /// pull_filter = { doc_ids = ["a", "b"] }
    /// introduce = true                # false: shared only with peers paired directly
    ///   [[database.peer]]
    ///   peer = "ABCD-EFGH"
    ///   push_filter = { doc_ids = ["shared"] }
    /// [[peer]]
    /// peer = "ABCD-EFGH"
    /// addresses = ["192.0.2.7:6984"]
    /// [[remote]]
    /// url = "https://couch.example.org:6984/notes"
    /// database = "notes"
    /// credentials_file = "/etc/syncd/couch.credentials"
    /// ```
    ///
    /// Unknown keys and values of the wrong type are errors that name the key,
    /// so a typo never leaves the agent half-configured.
    public init(toml text: String) throws(ConfigurationError) {
        let root: JSON.Object
        do {
            root = Self.json(of: try TOMLTable(string: text))
        } catch let error as TOMLParseError {
            throw ConfigurationError("not valid TOML at line \(error.source.begin.line), column \(error.source.begin.column): \(error.description)")
        } catch {
            throw ConfigurationError("not valid TOML: \(error)")
        }
        self.init()
        let file = Keys(root, path: "")
        try file.only(["node", "listener", "discovery", "database", "peer", "remote"])
        if let node = try file.table("node") {
            try node.only(["name", "max_document_size"])
            name = try node.string("name")
            if let name, name.isEmpty || name.utf8.count > 63 { throw node.error("name", "must be 1 to 63 bytes") }
            if let size = try node.count("max_document_size") { maximumDocumentSize = size }
        }
        if let listener = try file.table("listener") {
            try listener.only(["host", "port", "handshake_timeout", "request_head_timeout", "request_body_timeout", "idle_timeout", "max_connections",
                               "max_connections_per_client", "max_pending_connections", "max_feeds_per_client",
                               "max_request_size", "max_attachment_size"])
            if let host = try listener.string("host") { listenHost = host }
            if let port = try listener.integer("port") {
                guard (0...65535).contains(port) else { throw listener.error("port", "must be between 0 and 65535") }
                listenPort = port
            }
            if let timeout = try listener.seconds("handshake_timeout") { listenerLimits.handshakeTimeout = timeout }
            if let timeout = try listener.seconds("request_head_timeout") { listenerLimits.requestHeadTimeout = timeout }
            if let timeout = try listener.seconds("request_body_timeout") { listenerLimits.requestBodyTimeout = timeout }
            if let timeout = try listener.seconds("idle_timeout") { listenerLimits.idleTimeout = timeout }
            if let count = try listener.count("max_connections") { listenerLimits.maximumConnections = count }
            if let count = try listener.count("max_connections_per_client") { listenerLimits.maximumConnectionsPerClient = count }
            if let count = try listener.count("max_pending_connections") { listenerLimits.maximumPendingConnections = count }
            if let count = try listener.count("max_feeds_per_client") { listenerLimits.maximumFeedsPerClient = count }
            if let size = try listener.count("max_request_size") { maximumRequestSize = size }
            if let size = try listener.count("max_attachment_size") { maximumAttachmentSize = size }
        }
        if let discovery = try file.table("discovery") {
            try discovery.only(["enabled", "service_type"])
            if let enabled = try discovery.bool("enabled") { self.discovery = enabled }
            if let type = try discovery.string("service_type") {
                do { serviceType = try ServiceType(type) } catch { throw discovery.error("service_type", "is not valid: \(error)") }
            }
        }
        let configured = try file.tables("database")
        if !configured.isEmpty { databases = [] }
        for database in configured {
            try database.only(["name", "push_filter", "pull_filter", "peer", "introduce"])
            guard let name = try database.string("name") else { throw database.error("name", "is missing") }
            guard Catalog.isValidName(name) else { throw database.error("name", "'\(name)' is not a valid database name") }
            guard self.database(name) == nil else { throw database.error("name", "'\(name)' is configured twice") }
            var shared = SharedDatabase(name: name, pushFilter: try database.filter("push_filter"),
                                        pullFilter: try database.filter("pull_filter"))
            shared.introduce = try database.bool("introduce") ?? true
            for peer in try database.tables("peer") {
                try peer.only(["peer", "push_filter", "pull_filter"])
                guard let named = try peer.string("peer") else { throw peer.error("peer", "is missing (a peer's ID or name)") }
                shared.peerFilters.append(PeerFilters(peer: named, pushFilter: try peer.filter("push_filter"),
                                                      pullFilter: try peer.filter("pull_filter")))
            }
            databases.append(shared)
        }
        for peer in try file.tables("peer") {
            try peer.only(["peer", "addresses"])
            guard let named = try peer.string("peer") else { throw peer.error("peer", "is missing (a peer's ID or name)") }
            let addresses = try peer.strings("addresses") ?? []
            for address in addresses where HostPort.split(address) == nil {
                throw peer.error("addresses", "'\(address)' is not host:port")
            }
            peers.append(PeerAddresses(peer: named, addresses: addresses))
        }
        for remote in try file.tables("remote") {
            try remote.only(["url", "database", "credentials_file"])
            guard let url = try remote.string("url") else { throw remote.error("url", "is missing") }
            do {
                let parsed = try RemoteURL(url)
                guard parsed.credentials == nil else {
                    throw remote.error("url", "must not hold credentials: put them in credentials_file")
                }
            } catch let error as ConfigurationError {
                throw error
            } catch {
                throw remote.error("url", "\(error)")
            }
            guard let database = try remote.string("database") else { throw remote.error("database", "is missing") }
            guard Catalog.isValidName(database) else { throw remote.error("database", "'\(database)' is not a valid database name") }
            remotes.append(RemoteDatabase(url: url, database: database, credentialsFile: try remote.string("credentials_file")))
        }
    }

    /// A TOML table as JSON (dates and times as their text).
    private static func json(of table: TOMLTable) -> JSON.Object {
        JSON.Object(table.keys.map { key in (key: key, value: json(of: table[key]!)) })
    }

    private static func json(of value: any TOMLValueConvertible) -> JSON {
        switch value.type {
        case .table: .object(json(of: value.table!))
        case .array: .array(value.array!.map { json(of: $0) })
        case .string: .string(value.string!)
        case .int: .number(Double(value.int!))
        case .double: .number(value.double!)
        case .bool: .bool(value.bool!)
        default: .string("\(value)")
        }
    }
}

/// One table of the configuration, read key by key with errors that name the key.
private struct Keys {
    let object: JSON.Object
    /// The table's dotted path, e.g. `database[2]`.
    let path: String

    init(_ object: JSON.Object, path: String) {
        self.object = object
        self.path = path
    }

    func name(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    func error(_ key: String, _ message: String) -> ConfigurationError {
        ConfigurationError("\(name(key)) \(message)")
    }

    /// Refuses keys other than `known`.
    func only(_ known: Set<String>) throws(ConfigurationError) {
        for key in object.keys where !known.contains(key) {
            throw ConfigurationError("unknown key \(name(key)) (known here: \(known.sorted().joined(separator: ", ")))")
        }
    }

    func string(_ key: String) throws(ConfigurationError) -> String? {
        guard let value = object[key] else { return nil }
        guard let text = value.stringValue else { throw error(key, "must be a string") }
        return text
    }

    func integer(_ key: String) throws(ConfigurationError) -> Int? {
        guard let value = object[key] else { return nil }
        guard let number = value.intValue else { throw error(key, "must be an integer") }
        return number
    }

    /// A positive integer.
    func count(_ key: String) throws(ConfigurationError) -> Int? {
        guard let number = try integer(key) else { return nil }
        guard number > 0 else { throw error(key, "must be positive") }
        return number
    }

    /// A number of seconds from a millisecond to a day (fractions allowed).
    func seconds(_ key: String) throws(ConfigurationError) -> Duration? {
        guard let value = object[key] else { return nil }
        guard case .number(let seconds) = value, seconds >= 0.001, seconds <= 86_400 else {
            throw error(key, "must be a number of seconds from 0.001 to 86400")
        }
        return .milliseconds(Int((seconds * 1000).rounded()))
    }

    func bool(_ key: String) throws(ConfigurationError) -> Bool? {
        guard let value = object[key] else { return nil }
        guard let flag = value.boolValue else { throw error(key, "must be true or false") }
        return flag
    }

    func strings(_ key: String) throws(ConfigurationError) -> [String]? {
        guard let value = object[key] else { return nil }
        guard let items = value.arrayValue, let texts = Optional(items.compactMap(\.stringValue)), texts.count == items.count else {
            throw error(key, "must be a list of strings")
        }
        return texts
    }

    func table(_ key: String) throws(ConfigurationError) -> Keys? {
        guard let value = object[key] else { return nil }
        guard let table = value.objectValue else { throw error(key, "must be a table ([\(name(key))])") }
        return Keys(table, path: name(key))
    }

    /// An array of tables (`[[key]]`).
    func tables(_ key: String) throws(ConfigurationError) -> [Keys] {
        guard let value = object[key] else { return [] }
        guard let items = value.arrayValue else { throw error(key, "must be tables ([[\(name(key))]])") }
        return try items.enumerated().map { index, item throws(ConfigurationError) in
            guard let table = item.objectValue else { throw error(key, "must be tables ([[\(name(key))]])") }
            return Keys(table, path: "\(name(key))[\(index + 1)]")
        }
    }

    /// A filter: `{ selector = { … } }` (a Mango selector), `{ doc_ids = [ … ] }`, or
    /// `{ filter = "DESIGN/NAME", query_params = { … } }` (a design document's filter function,
    /// run where the documents are).
    func filter(_ key: String) throws(ConfigurationError) -> ReplicationFilter? {
        guard let filter = try table(key) else { return nil }
        try filter.only(["selector", "doc_ids", "filter", "query_params"])
        if let function = filter.object["filter"] {
            guard filter.object["selector"] == nil, filter.object["doc_ids"] == nil else {
                throw self.error(key, "must have one of selector, doc_ids and filter")
            }
            guard let name = function.stringValue, ReplicationFilter.designFunction(name) != nil else {
                throw filter.error("filter", "must be \"DESIGN/NAME\": a filter function of _design/DESIGN")
            }
            var parameters = JSON.Object()
            if let given = filter.object["query_params"] {
                guard let table = given.objectValue else { throw filter.error("query_params", "must be a table") }
                parameters = table
            }
            return .function(name: name, queryParameters: parameters)
        }
        guard filter.object["query_params"] == nil else { throw filter.error("query_params", "goes with filter") }
        switch (filter.object["selector"], try filter.strings("doc_ids")) {
        case (let selector?, nil):
            guard selector.objectValue != nil else { throw filter.error("selector", "must be a table (a Mango selector)") }
            do { _ = try Selector(selector) } catch { throw filter.error("selector", "is not a valid selector: \(error)") }
            return .selector(selector)
        case (nil, let ids?):
            guard !ids.isEmpty else { throw filter.error("doc_ids", "names no document") }
            return .documentIDs(ids)
        default:
            throw self.error(key, "must have one of selector, doc_ids and filter")
        }
    }
}

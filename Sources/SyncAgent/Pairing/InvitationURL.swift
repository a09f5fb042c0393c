import FoundationEssentials

/// The endpoint URL a pairing invitation is shown as (the QR code's text):
/// the inviting node's listener, the databases it shares unless only the
/// default one, its node ID and the invitation's secret.
///
/// `https://192.168.1.20:6984/#XM4JWCCH…-QBUQ…` (the default database `syncd`),
/// `https://192.168.1.20:6984/notes,photos#XM4JWCCH…-QBUQ…`
///
/// The ID and secret travel in the fragment, which clients never send to a
/// server, so no proxy or server log records them. They are upper-case base32,
/// so that a QR code carries them in its compact alphanumeric mode (``codeText``):
/// 37 modules for an IPv4 address and the default database, 41 with a list of
/// databases or an IPv6 address. The ID arrived out of band (a scanned
/// code, a pasted URL): the joining node trusts the certificate that has it and
/// no other, with no trust on first use, and reads the node's UUID from that
/// certificate. The longer form of earlier versions (`/db#uuid=…&id=…&secret=…`)
/// is still read.
public struct InvitationURL: Sendable, Hashable, CustomStringConvertible {
    /// The inviting node's listener address (an IP address or host name).
    public var host: String
    /// The listener's port.
    public var port: Int
    /// The databases the invitation shares (in the path, comma-separated; none
    /// there is the default database alone).
    public var databases: [String]
    /// The first database shared.
    public var database: String { databases[0] }
    /// The inviting node's UUID, when the URL carries it (the earlier form); the
    /// joining node reads it from the pinned certificate in any case.
    public var uuid: String?
    /// The inviting node's ID.
    public var id: NodeID
    /// The invitation's secret (lower-case base32, as stored).
    public var secret: String

    /// The database an invitation shares when its path names none: the agent's default.
    public static let defaultDatabase = "syncd"

    /// An invitation URL from its parts.
    public init(host: String, port: Int, databases: [String], uuid: String? = nil, id: NodeID, secret: String) {
        precondition(!databases.isEmpty, "an invitation shares at least one database")
        self.host = host
        self.port = port
        self.databases = databases
        self.uuid = uuid
        self.id = id
        self.secret = secret.lowercased()
    }

    /// Parses an invitation URL; says what is wrong with one that is not.
    public init(_ text: String) throws(PairingError) {
        let trimmed = text.trimmingWhitespace(newlines: true)
        guard let components = URLComponents(string: trimmed), components.scheme?.lowercased() == "https",
              let rawHost = components.host, !rawHost.isEmpty, let port = components.port
        else { throw .invalidURL("not an https URL with a host and port") }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let fragment = components.percentEncodedFragment ?? ""
        if fragment.contains("=") {
            try self.init(earlierForm: components, host: host, port: port, fragment: fragment)
            return
        }
        let path = components.percentEncodedPath.drop { $0 == "/" }
        let databases = path.isEmpty ? [Self.defaultDatabase]
            : path.split(separator: ",", omittingEmptySubsequences: false).map { PathEncoding.decode($0) ?? "" }
        guard !databases.contains(where: \.isEmpty) else { throw .invalidURL("the URL's database list has an empty name") }
        let parts = fragment.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw .invalidURL("the URL carries no node ID and secret (is it a syncd pairing URL?)") }
        guard let id = NodeID(String(parts[0])) else { throw .invalidURL("the URL carries no valid node ID") }
        guard !parts[1].isEmpty, parts[1].utf8.count <= 128, parts[1].allSatisfy({ $0.isLetter || $0.isNumber }) else {
            throw .invalidURL("the URL carries no invitation secret")
        }
        self.init(host: host, port: port, databases: databases, id: id, secret: String(parts[1]))
    }

    /// The earlier form: `https://HOST:PORT/DB#uuid=…&id=…[&dbs=…]&secret=…`.
    private init(earlierForm components: URLComponents, host: String, port: Int, fragment: String) throws(PairingError) {
        guard let database = components.path.split(separator: "/").last.map(String.init), !database.isEmpty else {
            throw .invalidURL("the URL names no database")
        }
        var fields: [String: String] = [:]
        for pair in fragment.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        guard let uuid = fields["uuid"], uuid.utf8.count == 32, uuid.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
            throw .invalidURL("the URL carries no node UUID (is it a syncd pairing URL?)")
        }
        guard let id = fields["id"].flatMap(NodeID.init) else { throw .invalidURL("the URL carries no valid node ID") }
        guard let secret = fields["secret"].flatMap({ PathEncoding.decode($0) }), !secret.isEmpty, secret.utf8.count <= 128 else {
            throw .invalidURL("the URL carries no invitation secret")
        }
        let listed = fields["dbs"].map { $0.split(separator: ",", omittingEmptySubsequences: false).map { PathEncoding.decode($0) ?? "" } } ?? [database]
        guard listed.first == database, !listed.contains(where: \.isEmpty) else {
            throw .invalidURL("the URL's database list does not start with its path's database")
        }
        self.init(host: host, port: port, databases: listed, uuid: uuid, id: id, secret: secret)
    }

    /// The URL's text, as printed for a person to paste.
    public var description: String { "https://" + rest }

    /// The text a QR code carries: the same URL with its scheme in capitals, so that all
    /// but the `#` (and a database name) fits the code's alphanumeric mode.
    public var codeText: String { "HTTPS://" + rest }

    private var rest: String {
        let path = databases == [Self.defaultDatabase] ? "" : databases.map(PathEncoding.segment).joined(separator: ",")
        return "\(HostPort.join(host, port))/\(path)#\(id.compact)-\(secret.uppercased())"
    }

    /// The listener's base URL, without the invitation.
    public var serverURL: String { "https://\(HostPort.join(host, port))" }
}

import Foundation

/// The endpoint URL a pairing invitation is shown as (the QR code's text):
/// the inviting node's listener and database, its UUID and node ID, and the
/// invitation's secret.
///
/// `https://192.168.1.20:5984/notes#uuid=…&id=…&secret=…`
///
/// The UUID, ID and secret travel in the fragment, which clients never send
/// to a server, so no proxy or server log records them. The ID arrived out of
/// band (a scanned code, a pasted URL): the joining node trusts the
/// certificate that has it and no other, with no trust on first use.
public struct InvitationURL: Sendable, Hashable, CustomStringConvertible {
    /// The inviting node's listener address (an IP address or host name).
    public var host: String
    /// The listener's port.
    public var port: Int
    /// The database the invitation shares.
    public var database: String
    /// The inviting node's UUID.
    public var uuid: String
    /// The inviting node's ID.
    public var id: NodeID
    /// The invitation's secret.
    public var secret: String

    /// An invitation URL from its parts.
    public init(host: String, port: Int, database: String, uuid: String, id: NodeID, secret: String) {
        self.host = host
        self.port = port
        self.database = database
        self.uuid = uuid
        self.id = id
        self.secret = secret
    }

    /// Parses an invitation URL; says what is wrong with one that is not.
    public init(_ text: String) throws(PairingError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let components = URLComponents(string: trimmed), components.scheme?.lowercased() == "https",
              let rawHost = components.host, !rawHost.isEmpty, let port = components.port
        else { throw .invalidURL("not an https URL with a host and port") }
        guard let database = components.path.split(separator: "/").last.map(String.init), !database.isEmpty else {
            throw .invalidURL("the URL names no database")
        }
        var fields: [String: String] = [:]
        for pair in (components.fragment ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]).removingPercentEncoding }
        }
        guard let uuid = fields["uuid"], uuid.utf8.count == 32, uuid.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
            throw .invalidURL("the URL carries no node UUID (is it a syncd pairing URL?)")
        }
        guard let id = fields["id"].flatMap(NodeID.init) else { throw .invalidURL("the URL carries no valid node ID") }
        guard let secret = fields["secret"], !secret.isEmpty, secret.utf8.count <= 128 else {
            throw .invalidURL("the URL carries no invitation secret")
        }
        self.init(host: rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost, port: port,
                  database: database, uuid: uuid, id: id, secret: secret)
    }

    /// The URL's text.
    public var description: String {
        "https://\(HostPort.join(host, port))/\(PathEncoding.segment(database))#uuid=\(uuid)&id=\(id.compact)&secret=\(secret)"
    }

    /// The listener's base URL, without the invitation.
    public var serverURL: String { "https://\(HostPort.join(host, port))" }
}

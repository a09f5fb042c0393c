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
    /// The databases the invitation shares: the first in the path, all of them
    /// in the fragment (`dbs=`) when there are several.
    public var databases: [String]
    /// The first database shared.
    public var database: String { databases[0] }
    /// The inviting node's UUID.
    public var uuid: String
    /// The inviting node's ID.
    public var id: NodeID
    /// The invitation's secret.
    public var secret: String

    /// An invitation URL from its parts.
    public init(host: String, port: Int, databases: [String], uuid: String, id: NodeID, secret: String) {
        precondition(!databases.isEmpty, "an invitation shares at least one database")
        self.host = host
        self.port = port
        self.databases = databases
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
        for pair in (components.percentEncodedFragment ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        guard let uuid = fields["uuid"], uuid.utf8.count == 32, uuid.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
            throw .invalidURL("the URL carries no node UUID (is it a syncd pairing URL?)")
        }
        guard let id = fields["id"].flatMap(NodeID.init) else { throw .invalidURL("the URL carries no valid node ID") }
        guard let secret = fields["secret"]?.removingPercentEncoding, !secret.isEmpty, secret.utf8.count <= 128 else {
            throw .invalidURL("the URL carries no invitation secret")
        }
        let listed = fields["dbs"].map { $0.split(separator: ",", omittingEmptySubsequences: false).map { String($0).removingPercentEncoding ?? "" } } ?? [database]
        guard listed.first == database, !listed.contains(where: \.isEmpty) else {
            throw .invalidURL("the URL's database list does not start with its path's database")
        }
        self.init(host: rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost, port: port,
                  databases: listed, uuid: uuid, id: id, secret: secret)
    }

    /// The URL's text.
    public var description: String {
        let list = databases.count > 1 ? "&dbs=" + databases.map(PathEncoding.segment).joined(separator: ",") : ""
        return "https://\(HostPort.join(host, port))/\(PathEncoding.segment(database))#uuid=\(uuid)&id=\(id.compact)\(list)&secret=\(secret)"
    }

    /// The listener's base URL, without the invitation.
    public var serverURL: String { "https://\(HostPort.join(host, port))" }
}

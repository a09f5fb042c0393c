import Discovery
import FoundationEssentials

/// The TXT keys a syncd node advertises.
public enum TXTKey {
    /// The TXT format version (`txtvers`), per DNS-SD convention.
    public static let version = "txtvers"
    /// The node's stable UUID: the identity replication checkpoints are keyed by.
    public static let uuid = "uuid"
    /// The name of the database the listener serves.
    public static let database = "db"
    /// The syncd protocol version the listener speaks.
    public static let protocolVersion = "proto"
    /// `1` when the listener speaks HTTPS, `0` for plain HTTP.
    public static let tls = "tls"
    /// The SHA-256 fingerprint of the listener's certificate, to pin it.
    public static let fingerprint = "fp"
}

extension Advertisement {
    /// A syncd node's advertisement: the TXT carries the node UUID, database name,
    /// protocol version, whether TLS is on and the certificate's SHA-256 fingerprint,
    /// so a browsing peer knows whom it found and how to check it before connecting.
    /// After a name collision the UUID's prefix makes the name unique.
    public static func syncd(
        uuid: String,
        database: String,
        port: UInt16,
        tls: Bool,
        fingerprint: String? = nil,
        name: String? = nil,
        type: ServiceType = .syncd
    ) throws(DiscoveryError) -> Advertisement {
        var txt = [
            TXTKey.version: "1",
            TXTKey.uuid: uuid,
            TXTKey.database: database,
            TXTKey.protocolVersion: String(syncdProtocolVersion),
            TXTKey.tls: tls ? "1" : "0",
        ]
        if let fingerprint { txt[TXTKey.fingerprint] = fingerprint }
        return try Advertisement(
            type: type, name: name ?? defaultName(uuid: uuid), port: port, txt: txt, collisionTag: " (\(uuid.prefix(8)))"
        )
    }

    /// The syncd protocol version advertised in the `proto` TXT key.
    public static let syncdProtocolVersion = 1

    /// A name unique per node and readable by people: `syncd on HOST (UUID prefix)`.
    public static func defaultName(uuid: String) -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        let suffix = " (\(uuid.prefix(8)))"
        var name = "syncd on " + host
        while name.utf8.count + suffix.utf8.count > 63 { name.removeLast() }
        return name + suffix
    }
}

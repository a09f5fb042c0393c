import Foundation

/// A service instance as published on the LAN: type, instance name, port and TXT record.
///
/// `syncd serve` builds one with ``Advertisement/syncd(uuid:database:port:tls:fingerprint:name:type:)``
/// and hands it to an ``Advertiser``; port and TXT can later change in place.
public struct Advertisement: Sendable, Hashable {
    /// The DNS-SD service type; peers browse for the same type.
    public var type: ServiceType
    /// The instance name wanted; on a collision the advertiser picks `name #2` and so on.
    public var name: String
    /// The listener's TCP port.
    public var port: UInt16
    /// The TXT record as key/value pairs; keys are case-insensitive and stored lowercased.
    public var txt: [String: String]

    /// Creates an advertisement, validating the name and TXT entries.
    public init(type: ServiceType, name: String, port: UInt16, txt: [String: String]) throws(DiscoveryError) {
        try Self.validate(name: name)
        try Self.validate(txt: txt)
        self.type = type
        self.name = name
        self.port = port
        self.txt = Dictionary(txt.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// A syncd node's advertisement: the TXT carries the node UUID, database name,
    /// protocol version, whether TLS is on and the certificate's SHA-256 fingerprint,
    /// so a browsing peer knows whom it found and how to check it before connecting.
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
        return try Advertisement(type: type, name: name ?? defaultName(uuid: uuid), port: port, txt: txt)
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

    /// The TXT record as DNS-SD strings, `txtvers` first (RFC 6763 §6.7), then by key.
    var txtStrings: [String] {
        txt.sorted { lhs, rhs in
            if lhs.key == TXTKey.version || rhs.key == TXTKey.version { return lhs.key == TXTKey.version }
            return lhs.key < rhs.key
        }.map { "\($0.key)=\($0.value)" }
    }

    static func validate(name: String) throws(DiscoveryError) {
        guard !name.isEmpty, name.utf8.count <= 63 else { throw .invalidInstanceName(name) }
    }

    static func validate(txt: [String: String]) throws(DiscoveryError) {
        for (key, value) in txt {
            let entry = "\(key)=\(value)"
            let printable = key.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value <= 0x7E && $0 != "=" }
            guard !key.isEmpty, printable, entry.utf8.count <= 255 else { throw .invalidTXT(entry) }
        }
    }
}

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

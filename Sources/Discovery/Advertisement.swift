/// A service instance as published on the LAN: type, instance name, port and TXT record.
///
/// An ``Advertiser`` publishes it; port and TXT can later change in place.
public struct Advertisement: Sendable, Hashable {
    /// The DNS-SD service type; browsers look for one type.
    public var type: ServiceType
    /// The instance name wanted; on a collision the advertiser picks another.
    public var name: String
    /// The service's TCP port.
    public var port: UInt16
    /// The TXT record as key/value pairs; keys are case-insensitive and stored lowercased.
    public var txt: [String: String]
    /// A suffix no other advertiser uses, such as ` (1b4e28ba)`, tried first after a name
    /// collision: two hosts that collided at once would otherwise both try `name #2`.
    public var collisionTag: String?

    /// Creates an advertisement, validating the name and TXT entries.
    public init(type: ServiceType, name: String, port: UInt16, txt: [String: String], collisionTag: String? = nil) throws(DiscoveryError) {
        try Self.validate(name: name)
        try Self.validate(txt: txt)
        self.type = type
        self.name = name
        self.port = port
        self.collisionTag = collisionTag
        self.txt = Dictionary(txt.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// The TXT record as DNS-SD strings, `txtvers` first (RFC 6763 §6.7), then by key.
    var txtStrings: [String] {
        txt.sorted { lhs, rhs in
            if lhs.key == "txtvers" || rhs.key == "txtvers" { return lhs.key == "txtvers" }
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

/// A DNS-SD service instance found on the LAN: its name, where it listens and its TXT record.
/// What the TXT means is for the caller to read (syncd's peers: SyncAgent's `Peer`).
public struct ServiceInstance: Sendable, Hashable, Codable {
    /// The DNS-SD instance name, e.g. `syncd on alpha (1b4e28ba)`.
    public var name: String
    /// The service type it was found under.
    public var type: ServiceType
    /// The DNS-SD domain, normally `local`.
    public var domain: String
    /// The mDNS host name the service points at, e.g. `alpha.local`.
    public var hostName: String
    /// Every address the service was resolved to, IPv4 first; link-local IPv6 carries its interface.
    public var addresses: [ServiceAddress]
    /// The service's TCP port.
    public var port: UInt16
    /// The TXT record, keys lowercased; the first of duplicate keys wins (RFC 6763 §6.4).
    public var txt: [String: String]

    /// Creates a service value.
    public init(
        name: String, type: ServiceType, domain: String, hostName: String,
        addresses: [ServiceAddress], port: UInt16, txt: [String: String]
    ) {
        self.name = name
        self.type = type
        self.domain = domain
        self.hostName = hostName
        self.addresses = addresses
        self.port = port
        self.txt = txt
    }
}

/// One address a service was resolved to.
public struct ServiceAddress: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// The address family.
    public enum Family: String, Sendable, Hashable, Codable {
        /// IPv4.
        case ipv4
        /// IPv6.
        case ipv6
    }

    /// The address family.
    public var family: Family
    /// The address in text form without interface scope, e.g. `10.0.0.2` or `fe80::1`.
    public var ip: String
    /// The local interface it was seen on; a link-local IPv6 address is usable only through it.
    public var interfaceIndex: Int32
    /// The local interface's name (e.g. `eth0`), when it still exists.
    public var interfaceName: String?

    /// Creates an address value.
    public init(family: Family, ip: String, interfaceIndex: Int32, interfaceName: String?) {
        self.family = family
        self.ip = ip
        self.interfaceIndex = interfaceIndex
        self.interfaceName = interfaceName
    }

    /// Whether this is an IPv6 link-local address (fe80::/10), which needs its interface scope.
    public var isLinkLocal: Bool {
        guard family == .ipv6, let first = ip.split(separator: ":").first, let word = UInt16(first, radix: 16) else {
            return false
        }
        return word & 0xFFC0 == 0xFE80
    }

    /// The host to connect to: the IP, with `%interface` appended for link-local IPv6.
    public var host: String {
        guard isLinkLocal else { return ip }
        return "\(ip)%\(interfaceName ?? String(interfaceIndex))"
    }

    /// The host as written in a URL: IPv6 in brackets, the scope's `%` escaped (RFC 6874).
    public var urlHost: String {
        switch family {
        case .ipv4: ip
        case .ipv6: isLinkLocal ? "[\(ip)%25\(interfaceName ?? String(interfaceIndex))]" : "[\(ip)]"
        }
    }

    /// The host to connect to.
    public var description: String { host }

    /// IPv4 before IPv6, then by text, then by interface: a stable order for display and comparison.
    public static func < (lhs: ServiceAddress, rhs: ServiceAddress) -> Bool {
        if lhs.family != rhs.family { return lhs.family == .ipv4 }
        if lhs.ip != rhs.ip { return lhs.ip < rhs.ip }
        return lhs.interfaceIndex < rhs.interfaceIndex
    }
}

/// What a ``Browser`` reports about services of its type.
public enum ServiceEvent: Sendable, Hashable {
    /// A service was found and resolved.
    case appeared(ServiceInstance)
    /// A known service's addresses, port or TXT changed; carries the new value.
    case changed(ServiceInstance)
    /// A service withdrew its advertisement (or this node lost its view of the LAN); carries the last value.
    case gone(ServiceInstance)

    /// The service the event is about.
    public var service: ServiceInstance {
        switch self {
        case .appeared(let service), .changed(let service), .gone(let service): service
        }
    }
}

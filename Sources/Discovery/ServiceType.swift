import CAvahi

/// A DNS-SD service type such as `_syncd._tcp`.
///
/// Nodes only see peers advertised under the same type, so a separate type keeps
/// separate groups on one LAN apart.
public struct ServiceType: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The type as DNS-SD spells it, e.g. `_syncd._tcp`.
    public let name: String

    /// The type syncd advertises and browses unless told otherwise.
    public static let syncd = ServiceType(validated: "_syncd._tcp")

    /// Validates `name` as a DNS-SD service type (`_name._tcp` or `_name._udp`).
    public init(_ name: String) throws(DiscoveryError) {
        guard avahi_is_valid_service_type_strict(name) != 0 else {
            throw .invalidServiceType(name)
        }
        self.name = name
    }

    private init(validated name: String) {
        self.name = name
    }

    /// Decodes a type from its string form, validating it.
    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        try self.init(name)
    }

    /// Encodes the type as its string form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }

    /// The type as DNS-SD spells it.
    public var description: String { name }
}

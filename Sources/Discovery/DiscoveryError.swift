/// Why discovery cannot work right now. Discovery reports it and keeps retrying;
/// everything else in syncd goes on without it.
public struct DiscoveryUnavailable: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of outage, for callers that react differently to each.
    public enum Reason: String, Sendable, Hashable, Codable {
        /// The D-Bus system bus cannot be reached, so avahi-daemon cannot be asked.
        case noBus
        /// The bus is there but avahi-daemon is not running (yet).
        case noDaemon
        /// The connection to avahi-daemon broke (it stopped or restarted); reconnecting.
        case disconnected
        /// Avahi refused for another reason, given in `message`.
        case failed
    }

    /// The kind of outage.
    public let reason: Reason
    /// Avahi's own words, for logs and operators.
    public let message: String

    /// Creates an outage report.
    public init(reason: Reason, message: String) {
        self.reason = reason
        self.message = message
    }

    /// A one-line explanation for operators.
    public var description: String {
        switch reason {
        case .noBus: "no D-Bus system bus (\(message))"
        case .noDaemon: "avahi-daemon is not running (\(message))"
        case .disconnected: "lost avahi-daemon (\(message)), reconnecting"
        case .failed: message
        }
    }
}

/// Whether discovery can currently talk to avahi-daemon.
public enum DiscoveryStatus: Sendable, Hashable, CustomStringConvertible {
    /// Connected: advertisements and browsing work.
    case available
    /// Not connected, with the reason; discovery retries by itself.
    case unavailable(DiscoveryUnavailable)

    /// A one-line summary for logs.
    public var description: String {
        switch self {
        case .available: "available"
        case .unavailable(let why): "unavailable: \(why)"
        }
    }
}

/// Input that discovery rejects before anything goes on the network.
public enum DiscoveryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not a DNS-SD service type such as `_syncd._tcp`.
    case invalidServiceType(String)
    /// Not usable as a DNS-SD instance name (empty, or longer than 63 bytes).
    case invalidInstanceName(String)
    /// A TXT entry that DNS-SD cannot carry (empty key, `=` in the key, or over 255 bytes).
    case invalidTXT(String)
    /// Avahi could not create its event loop (out of memory).
    case pollCreationFailed

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .invalidServiceType(let t): "invalid DNS-SD service type '\(t)' (expected e.g. _syncd._tcp)"
        case .invalidInstanceName(let n): "invalid DNS-SD instance name '\(n)' (1 to 63 bytes)"
        case .invalidTXT(let e): "invalid TXT entry '\(e)'"
        case .pollCreationFailed: "avahi could not create its event loop"
        }
    }
}

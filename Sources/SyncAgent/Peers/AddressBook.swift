import Discovery
import Locking

/// Where each paired peer may be reached, from every source the agent has:
/// what discovery sees now, the configuration's static addresses, and what
/// pairing and the peer's own requests recorded. Keyed by the peer's UUID, so
/// a peer that moves keeps its identity. Subscribers hear of every change.
///
/// Like Syncthing's address registry: the connection service for a peer asks
/// for its candidates and tries them; discovery and configuration only write here.
public final class AddressBook: Sendable {
    /// Where an address came from, best first.
    public enum Source: Int, Sendable, Comparable, Codable {
        /// Announced on the LAN now (mDNS).
        case discovered
        /// Written in the configuration file.
        case configured
        /// Recorded at pairing, or where the peer last connected from.
        case recorded

        public static func < (lhs: Source, rhs: Source) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    private struct State {
        var discovered: [String: [String]] = [:]
        var configured: [String: [String]] = [:]
        var recorded: [String: [String]] = [:]
    }
    private let state = Locked(State())
    private let subscribers = Broadcast<String>(bufferingPolicy: .bufferingNewest(64))

    /// An empty book.
    public init() {}

    /// The `host:port` candidates for the peer `uuid`, best first, without repeats.
    public func candidates(for uuid: String) -> [(address: String, source: Source)] {
        let uuid = uuid.lowercased()
        return state.withLock { state in
            var seen = Set<String>()
            var result: [(String, Source)] = []
            for (source, table) in [(Source.discovered, state.discovered), (.configured, state.configured), (.recorded, state.recorded)] {
                for address in table[uuid] ?? [] where seen.insert(address).inserted { result.append((address, source)) }
            }
            return result
        }
    }

    /// Records what discovery reports: a peer's addresses (each with its interface scope
    /// when link-local), or none when it is gone.
    public func discovered(_ event: PeerEvent) {
        let peer = event.peer
        var addresses: [String] = []
        if case .gone = event {} else {
            // IPv4 first (ServiceAddress's order); link-local IPv6 carries its `%interface` scope.
            addresses = peer.addresses.sorted().map { HostPort.join($0.host, Int(peer.port)) }
        }
        set(\.discovered, uuid: peer.uuid, addresses)
    }

    /// Sets the configuration's static addresses of the peer `uuid`.
    public func configure(uuid: String, _ addresses: [String]) {
        set(\.configured, uuid: uuid, addresses)
    }

    /// Sets the addresses pairing or the peer's requests recorded for `uuid`.
    public func record(uuid: String, _ addresses: [String]) {
        set(\.recorded, uuid: uuid, addresses)
    }

    /// The UUIDs of peers whose candidates change, from now on.
    public func changes() -> AsyncStream<String> {
        subscribers.subscribe()
    }

    private func set(_ table: WritableKeyPath<State, [String: [String]]>, uuid: String, _ addresses: [String]) {
        let uuid = uuid.lowercased()
        let changed = state.withLock { state in
            guard state[keyPath: table][uuid] ?? [] != addresses else { return false }
            state[keyPath: table][uuid] = addresses.isEmpty ? nil : addresses
            return true
        }
        if changed { subscribers.yield(uuid) }
    }
}

import Logging

/// Finds peers of one service type on the LAN through avahi-daemon and reports them
/// as ``PeerEvent``s.
///
/// One resolver stays open per peer, so address, port and TXT changes are reported as
/// ``PeerEvent/changed(_:)``. Our own advertisement is skipped by its UUID. The browser
/// reconnects by itself when avahi-daemon restarts or starts late.
///
/// ```swift
/// let browser = try Browser(type: .syncd, excluding: myUUID)
/// for await event in browser.events() {
///     if case .appeared(let peer) = event { print(peer.name, peer.addresses) }
/// }
/// ```
public final class Browser: Sendable {
    private let session: BrowserSession

    /// Starts browsing for `type`, ignoring the node whose TXT `uuid` is `ownUUID`.
    public init(type: ServiceType = .syncd, excluding ownUUID: String? = nil, logger: Logger = Logger(label: "syncd.discovery")) throws(DiscoveryError) {
        session = try BrowserSession(type: type, excludedUUID: ownUUID, logger: logger)
        session.start()
    }

    deinit {
        session.close()
    }

    /// Peer events from now on, starting with an ``PeerEvent/appeared(_:)`` for each peer
    /// already known, so a late subscriber misses nothing. Each call makes a new stream.
    public func events() -> AsyncStream<PeerEvent> {
        session.withPollLock {
            session.peerEvents.subscribe(replaying: session.table.peers.map(PeerEvent.appeared))
        } ?? AsyncStream { $0.finish() }
    }

    /// The peers known now, by instance name.
    public var peers: [Peer] {
        session.withPollLock { session.table.peers } ?? []
    }

    /// Whether avahi-daemon can be reached now, and why not if it cannot.
    public var status: DiscoveryStatus { session.currentStatus }

    /// Status changes, starting with the current status.
    public func statusUpdates() -> AsyncStream<DiscoveryStatus> { session.statusUpdates() }

    /// Stops browsing and frees avahi's objects; also done when the browser is released.
    public func close() {
        session.close()
    }
}

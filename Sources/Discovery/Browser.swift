import Locking
import Logging

/// Finds the services of one type on the LAN through avahi-daemon and reports them
/// as ``ServiceEvent``s, whatever their TXT records hold.
///
/// One resolver stays open per service, so address, port and TXT changes are reported as
/// ``ServiceEvent/changed(_:)``. The browser reconnects by itself when avahi-daemon
/// restarts or starts late.
///
/// ```swift
/// let browser = try Browser(type: .syncd)
/// for await event in browser.events() {
///     if case .appeared(let service) = event { print(service.name, service.addresses) }
/// }
/// ```
public final class Browser: Sendable {
    private let session: BrowserSession

    /// Starts browsing for `type`.
    public init(type: ServiceType = .syncd, logger: Logger = Logger(label: "syncd.discovery")) throws(DiscoveryError) {
        session = try BrowserSession(type: type, logger: logger)
        session.start()
    }

    deinit {
        session.close()
    }

    /// Service events from now on, starting with an ``ServiceEvent/appeared(_:)`` for each service
    /// already known, so a late subscriber misses nothing. Each call makes a new stream.
    public func events() -> AsyncStream<ServiceEvent> {
        session.withPollLock {
            session.serviceEvents.subscribe(replaying: session.table.services.map(ServiceEvent.appeared))
        } ?? AsyncStream { $0.finish() }
    }

    /// The services known now, by instance name.
    public var services: [ServiceInstance] {
        session.withPollLock { session.table.services } ?? []
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

import Locking
import CAvahi
import Locking
import Logging

/// The avahi side of a ``Browser``: one service browser, and one resolver kept open per
/// browse result so that address, port and TXT changes keep arriving.
/// See ``AvahiSession`` for the locking rule.
final class BrowserSession: AvahiSession, @unchecked Sendable {
    private let type: ServiceType
    private(set) var table: ServiceTable
    private var browser: OpaquePointer?
    private var resolvers: [ServiceKey: OpaquePointer] = [:]
    private var keysByResolver: [OpaquePointer: ServiceKey] = [:]
    let serviceEvents = Broadcast<ServiceEvent>()

    init(type: ServiceType, logger: Logger) throws(DiscoveryError) {
        self.type = type
        self.table = ServiceTable(type: type)
        try super.init(logger: logger)
    }

    // MARK: Hooks

    override func clientRunning(_ client: OpaquePointer) {
        guard browser == nil else { return }
        browser = avahi_service_browser_new(
            client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), type.name, nil, AvahiLookupFlags(0),
            { browser, interface, ipProtocol, event, name, _, domain, _, context in
                guard let browser, let name, let domain, let context else { return }
                let key = ServiceKey(interface: interface, ipProtocol: ipProtocol, name: String(cString: name), domain: String(cString: domain))
                Unmanaged<BrowserSession>.fromOpaque(context).takeUnretainedValue().browserEvent(browser, event, key)
            }, context
        )
        if browser == nil {
            logger.error("avahi: cannot browse \(type): \(Self.describe(avahi_client_errno(client)))")
            scheduleReconnect(after: 2000)
        }
    }

    override func clientWillBeFreed() {
        // avahi_client_free frees the browser and every resolver.
        browser = nil
        resolvers = [:]
        keysByResolver = [:]
        emit(table.removeAll())
    }

    override func sessionClosed() {
        serviceEvents.finish()
    }

    // MARK: Callbacks

    private func browserEvent(_ browser: OpaquePointer, _ event: AvahiBrowserEvent, _ key: ServiceKey) {
        switch event {
        case AVAHI_BROWSER_NEW:
            guard resolvers[key] == nil, let client = avahi_service_browser_get_client(browser) else { return }
            // Kept open (not a one-shot resolve) so later address, port and TXT changes are reported.
            let resolver = avahi_service_resolver_new(
                client, key.interface, key.ipProtocol, key.name, type.name, key.domain, key.ipProtocol, AvahiLookupFlags(0),
                { resolver, _, _, event, _, _, _, host, address, port, txt, _, context in
                    guard let resolver, let context else { return }
                    let session = Unmanaged<BrowserSession>.fromOpaque(context).takeUnretainedValue()
                    session.resolverEvent(resolver, event, host: host, address: address, port: port, txt: txt)
                }, context
            )
            guard let resolver else {
                logger.warning("avahi: cannot resolve '\(key.name)': \(Self.describe(avahi_client_errno(client)))")
                return
            }
            resolvers[key] = resolver
            keysByResolver[resolver] = key
        case AVAHI_BROWSER_REMOVE:
            if let resolver = resolvers.removeValue(forKey: key) {
                keysByResolver[resolver] = nil
                avahi_service_resolver_free(resolver)
            }
            emit(table.removed(key))
        case AVAHI_BROWSER_FAILURE:
            let error = avahi_client_errno(avahi_service_browser_get_client(browser))
            logger.error("avahi: browsing \(type) failed: \(Self.describe(error)); starting over")
            scheduleReconnect(after: 1000)
        default:
            break
        }
    }

    private func resolverEvent(
        _ resolver: OpaquePointer, _ event: AvahiResolverEvent, host: UnsafePointer<CChar>?,
        address: UnsafePointer<AvahiAddress>?, port: UInt16, txt: UnsafeMutablePointer<AvahiStringList>?
    ) {
        guard let key = keysByResolver[resolver] else { return }
        switch event {
        case AVAHI_RESOLVER_FOUND:
            guard let host, let address else { return }
            let resolution = Resolution(
                hostName: String(cString: host),
                address: AvahiConversions.serviceAddress(address, interface: key.interface),
                port: port, txt: AvahiConversions.txt(txt)
            )
            emit(table.resolved(key, resolution))
        case AVAHI_RESOLVER_FAILURE:
            // The resolver stays open and reports FOUND again when the records come back;
            // until the browser removes the service it keeps its last known values.
            let error = avahi_client_errno(avahi_service_resolver_get_client(resolver))
            logger.debug("avahi: resolving '\(key.name)' failed for now: \(Self.describe(error))")
        default:
            break
        }
    }

    private func emit(_ events: [ServiceEvent]) {
        for event in events {
            logger.debug("avahi: \(event)")
            serviceEvents.yield(event)
        }
    }
}

import CAvahi
import Locking
import Logging
import Synchronization

/// The avahi side of an ``Advertiser``: one entry group holding one service, registered
/// whenever the daemon is running and re-registered after collisions and reconnects.
/// See ``AvahiSession`` for the locking rule.
final class AdvertiserSession: AvahiSession, @unchecked Sendable {
    private(set) var advertisement: Advertisement { didSet { mirror() } }
    /// The name in use: the wanted name, or an alternative after a collision.
    private(set) var currentName: String { didSet { mirror() } }
    /// A copy of `advertisement` and `currentName` that readers take without the poll lock.
    let snapshot: Locked<(advertisement: Advertisement, name: String)>
    private var wanted = false
    private var group: OpaquePointer?
    let events = Broadcast<AdvertiserEvent>()

    init(_ advertisement: Advertisement, logger: Logger) throws(DiscoveryError) {
        self.advertisement = advertisement
        self.currentName = advertisement.name
        self.snapshot = Locked((advertisement, advertisement.name))
        try super.init(logger: logger)
    }

    private func mirror() {
        let copy = (advertisement, currentName)
        snapshot.withLock { $0 = copy }
    }

    // MARK: Operations (poll lock held)

    func publish() {
        wanted = true
        if let runningClient { register(runningClient) }
    }

    func withdraw() {
        guard wanted else { return }
        wanted = false
        if let group { avahi_entry_group_reset(group) }
        emit(.withdrawn)
    }

    func update(to new: Advertisement) {
        let old = advertisement
        advertisement = new
        if new.name != old.name { currentName = new.name }
        guard wanted, let group, let runningClient, avahi_entry_group_is_empty(group) == 0 else {
            return // The new values go out with the next registration.
        }
        if new.name != old.name || new.type != old.type {
            avahi_entry_group_reset(group)
            register(runningClient)
            return
        }
        var inPlace = true
        if new.txt != old.txt { inPlace = updateTXT(group) }
        if inPlace, new.port != old.port { inPlace = updatePort(group, client: runningClient) }
        if !inPlace {
            logger.warning("avahi: in-place update of '\(currentName)' failed; registering it again")
            avahi_entry_group_reset(group)
            register(runningClient)
        }
    }

    // MARK: Hooks

    override func clientRunning(_ client: OpaquePointer) {
        register(client)
    }

    override func clientHostNameChanging() {
        if let group { avahi_entry_group_reset(group) }
    }

    override func clientWillBeFreed() {
        group = nil
    }

    override func sessionClosed() {
        events.finish()
    }

    // MARK: Registration

    private func register(_ client: OpaquePointer) {
        guard wanted else { return }
        if group == nil {
            group = avahi_entry_group_new(client, { group, state, context in
                guard let group, let context else { return }
                Unmanaged<AdvertiserSession>.fromOpaque(context).takeUnretainedValue().groupStateChanged(group, state)
            }, context)
        }
        guard let group else {
            emit(.failed("cannot create an entry group: \(Self.describe(avahi_client_errno(client)))"))
            return
        }
        guard avahi_entry_group_is_empty(group) != 0 else { return }
        // A local collision (the same name already registered on this daemon) is reported at once.
        for _ in 0..<32 {
            let added = addService(group)
            if added == Int32(AVAHI_ERR_COLLISION) {
                rename()
                continue
            }
            guard added == 0 else {
                emit(.failed("cannot add service '\(currentName)': \(Self.describe(added))"))
                avahi_entry_group_reset(group)
                return
            }
            let committed = avahi_entry_group_commit(group)
            guard committed == 0 else {
                emit(.failed("cannot commit service '\(currentName)': \(Self.describe(committed))"))
                return
            }
            emit(.registering(name: currentName))
            return
        }
        emit(.failed("no free name found for '\(advertisement.name)'"))
    }

    private func addService(_ group: OpaquePointer) -> Int32 {
        let txt = AvahiConversions.stringList(advertisement.txtStrings)
        defer { avahi_string_list_free(txt) }
        return avahi_entry_group_add_service_strlst(
            group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0),
            currentName, advertisement.type.name, nil, nil, advertisement.port, txt
        )
    }

    private func updateTXT(_ group: OpaquePointer) -> Bool {
        let txt = AvahiConversions.stringList(advertisement.txtStrings)
        defer { avahi_string_list_free(txt) }
        let result = avahi_entry_group_update_service_txt_strlst(
            group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0),
            currentName, advertisement.type.name, nil, txt
        )
        if result != 0 { logger.warning("avahi: TXT update failed: \(Self.describe(result))") }
        return result == 0
    }

    /// Replaces the service's SRV record in place (AVAHI_PUBLISH_UPDATE), which avahi
    /// re-announces without withdrawing the service.
    private func updatePort(_ group: OpaquePointer, client: OpaquePointer) -> Bool {
        guard let host = avahi_client_get_host_name_fqdn(client), let domain = avahi_client_get_domain_name(client) else {
            return false
        }
        var name = [CChar](repeating: 0, count: Int(AVAHI_DOMAIN_NAME_MAX))
        guard avahi_service_name_join(&name, name.count, currentName, advertisement.type.name, domain) == 0 else {
            return false
        }
        let recordName = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let data = AvahiConversions.srvRecordData(port: advertisement.port, target: String(cString: host))
        let result = avahi_entry_group_add_record(
            group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC),
            AvahiPublishFlags(AVAHI_PUBLISH_UNIQUE.rawValue | AVAHI_PUBLISH_UPDATE.rawValue),
            recordName, UInt16(AVAHI_DNS_CLASS_IN), UInt16(AVAHI_DNS_TYPE_SRV),
            UInt32(AVAHI_DEFAULT_TTL_HOST_NAME), data, data.count
        )
        if result != 0 { logger.warning("avahi: SRV update failed: \(Self.describe(result))") }
        return result == 0
    }

    /// Picks another name after a collision: first the name with the advertisement's
    /// ``Advertisement/collisionTag``, which no other node picks too (two hosts that
    /// collided at the same moment would otherwise both try `Name #2`, and again
    /// `Name #3`); then avahi's numbered alternatives.
    private func rename() {
        let old = currentName
        let tag = advertisement.collisionTag ?? ""
        if !tag.isEmpty, !currentName.hasSuffix(tag), (currentName + tag).utf8.count <= 63 {
            currentName += tag
        } else {
            guard let alternative = avahi_alternative_service_name(currentName) else { return }
            defer { avahi_free(alternative) }
            currentName = String(cString: alternative)
        }
        logger.notice("avahi: service name '\(old)' is taken; using '\(currentName)'")
        emit(.renamed(from: old, to: currentName))
    }

    private func groupStateChanged(_ group: OpaquePointer, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            emit(.established(name: currentName))
        case AVAHI_ENTRY_GROUP_COLLISION:
            // Two hosts that collided at the same moment would otherwise pick the same
            // alternative and probe in step again: re-register after a random pause.
            rename()
            avahi_entry_group_reset(group)
            runLater(after: 20, jitter: 500)
        case AVAHI_ENTRY_GROUP_FAILURE:
            let error = avahi_client_errno(avahi_entry_group_get_client(group))
            emit(.failed("entry group failed: \(Self.describe(error))"))
        default:
            break
        }
    }

    override func later() {
        if wanted, let runningClient { register(runningClient) }
    }

    private func emit(_ event: AdvertiserEvent) {
        switch event {
        case .failed(let message): logger.error("avahi: \(message)")
        default: logger.debug("avahi: \(event)")
        }
        events.yield(event)
    }
}

/// One avahi browse result: a service instance as seen on one interface over one protocol.
struct ServiceKey: Hashable, Sendable {
    var interface: Int32
    var ipProtocol: Int32
    var name: String
    var domain: String
}

/// What one open resolver last reported for its ``ServiceKey``.
struct Resolution: Hashable, Sendable {
    var hostName: String
    var address: PeerAddress
    var port: UInt16
    var txt: [String: String]
}

/// Folds per-interface, per-protocol resolver results into one ``Peer`` per instance name
/// and says which ``PeerEvent`` each change makes. Pure, so its rules are tested directly.
struct PeerTable: Sendable {
    private struct Instance: Sendable {
        var resolutions: [ServiceKey: Resolution] = [:]
        var latest: ServiceKey?
        var visible: Peer?
    }

    let type: ServiceType
    let excludedUUID: String?
    private var instances: [String: Instance] = [:]

    init(type: ServiceType, excludedUUID: String?) {
        self.type = type
        self.excludedUUID = excludedUUID
    }

    /// The peers visible now, by name.
    var peers: [Peer] {
        instances.values.compactMap(\.visible).sorted { $0.name < $1.name }
    }

    /// A resolver (re)reported `resolution` for `key`.
    mutating func resolved(_ key: ServiceKey, _ resolution: Resolution) -> [PeerEvent] {
        update(key) { instance in
            instance.resolutions[key] = resolution
            instance.latest = key
        }
    }

    /// The browser withdrew `key`.
    mutating func removed(_ key: ServiceKey) -> [PeerEvent] {
        update(key) { instance in
            instance.resolutions[key] = nil
            if instance.latest == key { instance.latest = instance.resolutions.keys.first }
        }
    }

    /// Everything is forgotten (the daemon connection went away).
    mutating func removeAll() -> [PeerEvent] {
        let gone = peers.map(PeerEvent.gone)
        instances = [:]
        return gone
    }

    private mutating func update(_ key: ServiceKey, _ change: (inout Instance) -> Void) -> [PeerEvent] {
        let id = Self.instanceID(key)
        var instance = instances[id] ?? Instance()
        let before = instance.visible
        change(&instance)
        let after = peer(named: key.name, domain: key.domain, from: instance)
        instance.visible = after
        instances[id] = instance.resolutions.isEmpty ? nil : instance

        switch (before, after) {
        case (nil, nil): return []
        case (nil, let new?): return [.appeared(new)]
        case (let old?, nil): return [.gone(old)]
        case (let old?, let new?):
            if old == new { return [] }
            if old.uuid != new.uuid { return [.gone(old), .appeared(new)] }
            return [.changed(new)]
        }
    }

    private func peer(named name: String, domain: String, from instance: Instance) -> Peer? {
        guard let latestKey = instance.latest, let latest = instance.resolutions[latestKey] else { return nil }
        guard let uuid = latest.txt[TXTKey.uuid], !uuid.isEmpty, uuid != excludedUUID else { return nil }
        let addresses = Set(instance.resolutions.values.map(\.address)).sorted()
        return Peer(
            uuid: uuid, name: name, type: type, domain: domain, hostName: latest.hostName,
            addresses: addresses, port: latest.port, txt: latest.txt
        )
    }

    private static func instanceID(_ key: ServiceKey) -> String {
        "\(key.name)\u{0}\(key.domain)"
    }
}

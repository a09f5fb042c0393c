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
    var address: ServiceAddress
    var port: UInt16
    var txt: [String: String]
}

/// Folds per-interface, per-protocol resolver results into one ``ServiceInstance`` per
/// instance name and says which ``ServiceEvent`` each change makes, whatever the TXT
/// holds. Pure, so its rules are tested directly.
struct ServiceTable: Sendable {
    private struct Instance: Sendable {
        var resolutions: [ServiceKey: Resolution] = [:]
        var latest: ServiceKey?
        var visible: ServiceInstance?
    }

    let type: ServiceType
    private var instances: [String: Instance] = [:]

    init(type: ServiceType) {
        self.type = type
    }

    /// The services visible now, by name.
    var services: [ServiceInstance] {
        instances.values.compactMap(\.visible).sorted { $0.name < $1.name }
    }

    /// A resolver (re)reported `resolution` for `key`.
    mutating func resolved(_ key: ServiceKey, _ resolution: Resolution) -> [ServiceEvent] {
        update(key) { instance in
            instance.resolutions[key] = resolution
            instance.latest = key
        }
    }

    /// The browser withdrew `key`.
    mutating func removed(_ key: ServiceKey) -> [ServiceEvent] {
        update(key) { instance in
            instance.resolutions[key] = nil
            if instance.latest == key { instance.latest = instance.resolutions.keys.first }
        }
    }

    /// Everything is forgotten (the daemon connection went away).
    mutating func removeAll() -> [ServiceEvent] {
        let gone = services.map(ServiceEvent.gone)
        instances = [:]
        return gone
    }

    private mutating func update(_ key: ServiceKey, _ change: (inout Instance) -> Void) -> [ServiceEvent] {
        let id = Self.instanceID(key)
        var instance = instances[id] ?? Instance()
        let before = instance.visible
        change(&instance)
        let after = service(named: key.name, domain: key.domain, from: instance)
        instance.visible = after
        instances[id] = instance.resolutions.isEmpty ? nil : instance

        switch (before, after) {
        case (nil, nil): return []
        case (nil, let new?): return [.appeared(new)]
        case (let old?, nil): return [.gone(old)]
        case (let old?, let new?): return old == new ? [] : [.changed(new)]
        }
    }

    private func service(named name: String, domain: String, from instance: Instance) -> ServiceInstance? {
        guard let latestKey = instance.latest, let latest = instance.resolutions[latestKey] else { return nil }
        let addresses = Set(instance.resolutions.values.map(\.address)).sorted()
        return ServiceInstance(
            name: name, type: type, domain: domain, hostName: latest.hostName,
            addresses: addresses, port: latest.port, txt: latest.txt
        )
    }

    private static func instanceID(_ key: ServiceKey) -> String {
        "\(key.name)\u{0}\(key.domain)"
    }
}

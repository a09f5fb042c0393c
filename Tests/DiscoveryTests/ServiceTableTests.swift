@testable import Discovery
import Testing

/// The rules that turn resolver results into service events, whatever the TXT holds.
struct ServiceTableTests {
    let type = ServiceType.syncd
    let ipv4 = ServiceKey(interface: 2, ipProtocol: 0, name: "alpha", domain: "local")
    let ipv6 = ServiceKey(interface: 2, ipProtocol: 1, name: "alpha", domain: "local")

    func resolution(_ ip: String, family: ServiceAddress.Family = .ipv4, port: UInt16 = 5984, txt: [String: String] = ["db": "notes"]) -> Resolution {
        Resolution(
            hostName: "a.local",
            address: ServiceAddress(family: family, ip: ip, interfaceIndex: 2, interfaceName: "eth0"),
            port: port, txt: txt
        )
    }

    @Test func appearsOnceThenChangesThenGoes() {
        var table = ServiceTable(type: type)
        let appeared = table.resolved(ipv4, resolution("10.0.0.1"))
        #expect(appeared.count == 1)
        guard case .appeared(let service)? = appeared.first else { Issue.record("expected appeared"); return }
        #expect(service.name == "alpha" && service.port == 5984 && service.addresses.map(\.ip) == ["10.0.0.1"])

        #expect(table.resolved(ipv4, resolution("10.0.0.1")).isEmpty, "an identical result is no event")

        let ipv6Added = table.resolved(ipv6, resolution("fe80::1", family: .ipv6))
        guard case .changed(let both)? = ipv6Added.first else { Issue.record("expected changed"); return }
        #expect(both.addresses.map(\.host) == ["10.0.0.1", "fe80::1%eth0"])

        guard case .changed(let moved)? = table.resolved(ipv4, resolution("10.0.0.9")).first else {
            Issue.record("expected changed"); return
        }
        #expect(moved.addresses.map(\.ip) == ["10.0.0.9", "fe80::1"])

        guard case .changed(let newPort)? = table.resolved(ipv4, resolution("10.0.0.9", port: 6000)).first else {
            Issue.record("expected changed"); return
        }
        #expect(newPort.port == 6000)

        #expect(table.removed(ipv6).count == 1, "losing one of two results changes the addresses")
        let gone = table.removed(ipv4)
        guard case .gone(let last)? = gone.first else { Issue.record("expected gone"); return }
        #expect(last.addresses.map(\.ip) == ["10.0.0.9"])
        #expect(table.services.isEmpty)
    }

    /// Discovery reads no TXT: a service without syncd's `uuid` is a service all the same,
    /// and a new TXT under the same name is a change (SyncAgent's PeerTable reads the `uuid`).
    @Test func keepsAnyTXT() {
        var table = ServiceTable(type: type)
        let appeared = table.resolved(ipv4, resolution("10.0.0.1", txt: ["path": "/x"]))
        #expect(appeared == [.appeared(table.services[0])])
        #expect(table.services.map(\.txt) == [["path": "/x"]])
        let changed = table.resolved(ipv4, resolution("10.0.0.1", txt: ["uuid": "new"]))
        #expect(changed.map(\.service.txt) == [["uuid": "new"]])
        #expect(changed.allSatisfy { if case .changed = $0 { true } else { false } })
    }

    @Test func removeAllReportsEveryServiceGone() {
        var table = ServiceTable(type: type)
        _ = table.resolved(ipv4, resolution("10.0.0.1"))
        _ = table.resolved(ServiceKey(interface: 2, ipProtocol: 0, name: "beta", domain: "local"), resolution("10.0.0.2"))
        let gone = table.removeAll()
        #expect(Set(gone.map(\.service.name)) == ["alpha", "beta"])
        #expect(gone.allSatisfy { if case .gone = $0 { true } else { false } })
        #expect(table.services.isEmpty)
    }
}

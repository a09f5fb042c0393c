@testable import Discovery
import Testing

/// The rules that turn resolver results into peer events.
struct PeerTableTests {
    let type = ServiceType.syncd
    let ipv4 = ServiceKey(interface: 2, ipProtocol: 0, name: "alpha", domain: "local")
    let ipv6 = ServiceKey(interface: 2, ipProtocol: 1, name: "alpha", domain: "local")

    func resolution(_ ip: String, family: PeerAddress.Family = .ipv4, port: UInt16 = 5984, uuid: String = "u1", db: String = "notes") -> Resolution {
        Resolution(
            hostName: "a.local",
            address: PeerAddress(family: family, ip: ip, interfaceIndex: 2, interfaceName: "eth0"),
            port: port, txt: ["uuid": uuid, "db": db]
        )
    }

    @Test func appearsOnceThenChangesThenGoes() {
        var table = PeerTable(type: type, excludedUUID: nil)
        let appeared = table.resolved(ipv4, resolution("10.0.0.1"))
        #expect(appeared.count == 1)
        guard case .appeared(let peer)? = appeared.first else { Issue.record("expected appeared"); return }
        #expect(peer.uuid == "u1" && peer.port == 5984 && peer.addresses.map(\.ip) == ["10.0.0.1"])

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
        #expect(table.peers.isEmpty)
    }

    @Test func skipsOwnUUIDAndServicesWithoutUUID() {
        var table = PeerTable(type: type, excludedUUID: "me")
        #expect(table.resolved(ipv4, resolution("10.0.0.1", uuid: "me")).isEmpty)
        var noUUID = resolution("10.0.0.2")
        noUUID.txt = ["db": "x"]
        let other = ServiceKey(interface: 2, ipProtocol: 0, name: "beta", domain: "local")
        #expect(table.resolved(other, noUUID).isEmpty)
        #expect(table.peers.isEmpty)
    }

    @Test func aNewUUIDUnderTheSameNameIsANewPeer() {
        var table = PeerTable(type: type, excludedUUID: nil)
        _ = table.resolved(ipv4, resolution("10.0.0.1", uuid: "old"))
        let events = table.resolved(ipv4, resolution("10.0.0.1", uuid: "new"))
        #expect(events.count == 2)
        #expect(events.first.map { if case .gone(let p) = $0 { p.uuid == "old" } else { false } } == true)
        #expect(events.last.map { if case .appeared(let p) = $0 { p.uuid == "new" } else { false } } == true)
    }

    @Test func removeAllReportsEveryPeerGone() {
        var table = PeerTable(type: type, excludedUUID: nil)
        _ = table.resolved(ipv4, resolution("10.0.0.1", uuid: "one"))
        _ = table.resolved(ServiceKey(interface: 2, ipProtocol: 0, name: "beta", domain: "local"), resolution("10.0.0.2", uuid: "two"))
        let gone = table.removeAll()
        #expect(Set(gone.map(\.peer.uuid)) == ["one", "two"])
        #expect(gone.allSatisfy { if case .gone = $0 { true } else { false } })
        #expect(table.peers.isEmpty)
    }
}

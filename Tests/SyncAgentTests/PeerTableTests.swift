import Discovery
import Foundation
import SyncAgent
import Testing

/// How syncd reads discovered services: its TXT format, and which services are peers.
@Suite struct PeerTableTests {
    func service(_ name: String = "alpha", txt: [String: String], port: UInt16 = 5984) -> ServiceInstance {
        ServiceInstance(
            name: name, type: .syncd, domain: "local", hostName: "a.local",
            addresses: [ServiceAddress(family: .ipv4, ip: "10.0.0.1", interfaceIndex: 2, interfaceName: "eth0")],
            port: port, txt: txt
        )
    }

    @Test func syncdAdvertisementCarriesIdentityAndTLS() throws {
        let ad = try Advertisement.syncd(uuid: "1b4e28ba-2fa1", database: "notes", port: 5984, tls: true, fingerprint: "ab:cd")
        #expect(ad.txt == ["txtvers": "1", "uuid": "1b4e28ba-2fa1", "db": "notes", "proto": "1", "tls": "1", "fp": "ab:cd"])
        #expect(ad.name.hasPrefix("syncd on ") && ad.name.hasSuffix(" (1b4e28ba)"))
        #expect(ad.collisionTag == " (1b4e28ba)")
        #expect(ad.type == .syncd)
        let peer = try #require(Peer(service(txt: ad.txt)))
        #expect(peer.uuid == "1b4e28ba-2fa1" && peer.database == "notes" && peer.usesTLS && peer.fingerprint == "ab:cd")
        #expect(peer.protocolVersion == Advertisement.syncdProtocolVersion)
    }

    /// `syncd browse --json` prints a peer as one flat object, as before the service was split out.
    @Test func aPeerIsOneFlatJSONObject() throws {
        let peer = try #require(Peer(service(txt: ["uuid": "u1", "db": "notes"])))
        let data = try JSONEncoder().encode(peer)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["uuid", "name", "type", "domain", "hostName", "addresses", "port", "txt"])
        #expect(try JSONDecoder().decode(Peer.self, from: data) == peer)
    }

    @Test func appearsChangesAndGoes() {
        var table = PeerTable(excluding: nil)
        let first = service(txt: ["uuid": "u1"])
        #expect(table.apply(.appeared(first)).map(\.peer.uuid) == ["u1"])
        let moved = service(txt: ["uuid": "u1"], port: 6000)
        #expect(table.apply(.changed(moved)) == [.changed(Peer(moved)!)])
        #expect(table.apply(.changed(moved)).isEmpty, "the same peer again is no event")
        #expect(table.apply(.gone(moved)) == [.gone(Peer(moved)!)])
    }

    /// Discovery keeps every service; the syncd layer drops those without `uuid` and this node's own.
    @Test func skipsOwnUUIDAndServicesWithoutUUID() {
        var table = PeerTable(excluding: "me")
        #expect(table.apply(.appeared(service(txt: ["uuid": "me"]))).isEmpty)
        #expect(table.apply(.appeared(service("beta", txt: ["db": "x"]))).isEmpty)
        #expect(table.apply(.appeared(service("gamma", txt: ["uuid": ""]))).isEmpty)
        #expect(table.apply(.gone(service("beta", txt: ["db": "x"]))).isEmpty)
        // A service that starts to name a UUID becomes a peer; one that stops is gone.
        #expect(table.apply(.changed(service("beta", txt: ["uuid": "b"]))).map(\.peer.uuid) == ["b"])
        let dropped = table.apply(.changed(service("beta", txt: [:])))
        #expect(dropped.count == 1 && dropped.allSatisfy { if case .gone(let peer) = $0 { peer.uuid == "b" } else { false } })
    }

    @Test func aNewUUIDUnderTheSameNameIsANewPeer() {
        var table = PeerTable(excluding: nil)
        _ = table.apply(.appeared(service(txt: ["uuid": "old"])))
        let events = table.apply(.changed(service(txt: ["uuid": "new"])))
        #expect(events.count == 2)
        #expect(events.first.map { if case .gone(let p) = $0 { p.uuid == "old" } else { false } } == true)
        #expect(events.last.map { if case .appeared(let p) = $0 { p.uuid == "new" } else { false } } == true)
    }
}

import CAvahi
@testable import Discovery
import Testing

/// What goes into an advertisement and how avahi's values come back out.
struct AdvertisementTests {
    @Test func syncdAdvertisementCarriesIdentityAndTLS() throws {
        let ad = try Advertisement.syncd(uuid: "1b4e28ba-2fa1", database: "notes", port: 5984, tls: true, fingerprint: "ab:cd")
        #expect(ad.txt == ["txtvers": "1", "uuid": "1b4e28ba-2fa1", "db": "notes", "proto": "1", "tls": "1", "fp": "ab:cd"])
        #expect(ad.txtStrings.first == "txtvers=1")
        #expect(ad.txtStrings.dropFirst() == ["db=notes", "fp=ab:cd", "proto=1", "tls=1", "uuid=1b4e28ba-2fa1"])
        #expect(ad.name.hasPrefix("syncd on ") && ad.name.hasSuffix(" (1b4e28ba)"))
        #expect(ad.type == .syncd)
    }

    @Test func rejectsWhatDNSSDCannotCarry() {
        #expect(throws: DiscoveryError.invalidServiceType("syncd")) { try ServiceType("syncd") }
        #expect(throws: DiscoveryError.self) { try ServiceType("_syncd._bogus") }
        #expect(throws: DiscoveryError.self) { try Advertisement(type: .syncd, name: "", port: 1, txt: [:]) }
        #expect(throws: DiscoveryError.self) { try Advertisement(type: .syncd, name: String(repeating: "x", count: 64), port: 1, txt: [:]) }
        #expect(throws: DiscoveryError.self) { try Advertisement(type: .syncd, name: "n", port: 1, txt: ["a=b": "c"]) }
        #expect(throws: DiscoveryError.self) { try Advertisement(type: .syncd, name: "n", port: 1, txt: ["k": String(repeating: "v", count: 254)]) }
        #expect(throws: Never.self) { try ServiceType("_other-group._tcp") }
    }

    @Test func txtRoundTripsThroughAvahiStringLists() {
        let list = AvahiConversions.stringList(["txtvers=1", "UUID=abc", "flag", "uuid=second", "db=a=b"])
        defer { avahi_string_list_free(list) }
        #expect(AvahiConversions.txt(list) == ["txtvers": "1", "uuid": "abc", "flag": "", "db": "a=b"])
    }

    @Test func srvRecordDataIsWireFormat() {
        let data = AvahiConversions.srvRecordData(port: 0x1F90, target: "my\\.host.local")
        #expect(data == [0, 0, 0, 0, 0x1F, 0x90, 7] + Array("my.host".utf8) + [5] + Array("local".utf8) + [0])
        #expect(AvahiConversions.labels("a\\032b.local") == [Array("a b".utf8), Array("local".utf8)])
    }

    @Test func linkLocalAddressesCarryTheirInterface() {
        let linkLocal = PeerAddress(family: .ipv6, ip: "fe80::1c2:3ff:fe04:506", interfaceIndex: 3, interfaceName: "eth0")
        #expect(linkLocal.isLinkLocal)
        #expect(linkLocal.host == "fe80::1c2:3ff:fe04:506%eth0")
        #expect(linkLocal.urlHost == "[fe80::1c2:3ff:fe04:506%25eth0]")
        let global = PeerAddress(family: .ipv6, ip: "2001:db8::1", interfaceIndex: 3, interfaceName: "eth0")
        #expect(!global.isLinkLocal && global.host == "2001:db8::1" && global.urlHost == "[2001:db8::1]")
        let v4 = PeerAddress(family: .ipv4, ip: "10.0.0.1", interfaceIndex: 3, interfaceName: "eth0")
        #expect(v4.host == "10.0.0.1" && v4 < global)
    }
}

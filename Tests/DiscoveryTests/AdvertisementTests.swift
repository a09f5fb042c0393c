import CAvahi
@testable import Discovery
import Testing

/// What goes into an advertisement and how avahi's values come back out.
struct AdvertisementTests {
    @Test func txtKeysAreLowercasedAndTheVersionGoesFirst() throws {
        let ad = try Advertisement(type: .syncd, name: "n", port: 1, txt: ["b": "2", "TXTVERS": "1", "A": "x"])
        #expect(ad.txt == ["txtvers": "1", "a": "x", "b": "2"])
        #expect(ad.txtStrings == ["txtvers=1", "a=x", "b=2"])
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
        let linkLocal = ServiceAddress(family: .ipv6, ip: "fe80::1c2:3ff:fe04:506", interfaceIndex: 3, interfaceName: "eth0")
        #expect(linkLocal.isLinkLocal)
        #expect(linkLocal.host == "fe80::1c2:3ff:fe04:506%eth0")
        #expect(linkLocal.urlHost == "[fe80::1c2:3ff:fe04:506%25eth0]")
        let global = ServiceAddress(family: .ipv6, ip: "2001:db8::1", interfaceIndex: 3, interfaceName: "eth0")
        #expect(!global.isLinkLocal && global.host == "2001:db8::1" && global.urlHost == "[2001:db8::1]")
        let v4 = ServiceAddress(family: .ipv4, ip: "10.0.0.1", interfaceIndex: 3, interfaceName: "eth0")
        #expect(v4.host == "10.0.0.1" && v4 < global)
    }
}

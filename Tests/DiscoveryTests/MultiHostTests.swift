import Discovery
import Foundation
import SyncAgent
import TestBed
import Testing

/// Discovery between hosts made of network namespaces, each with its own D-Bus and
/// avahi-daemon (see TestBed). Serialized: each test owns its hosts, and the API tests
/// point this process at one host's bus through the environment.
@Suite(.serialized)
struct MultiHostTests {
    @Test func advertisementIsSeenBySyncdAvahiBrowseAndZeroconf() async throws {
        try await TestBed.with(hosts: 3) { bed in
            let (a, b, c) = (bed["a"], bed["b"], bed["c"])
            let uuid = newUUID()
            let id = NodeID(certificateDER: Array("Alpha Node".utf8))
            let advertiser = try a.advertise(uuid: uuid, port: 5984, name: "Alpha Node", fingerprint: id.fingerprint)
            try await advertiser.waitForEvent { $0.event == "established" }

            // syncd browse in B.
            let listing = try b.run([try TestBed.syncdExecutable, "browse", "--json", "--wait", "2"])
            let peers = listing.output.split(separator: "\n").compactMap { EventLine(String($0))?.peer }
            let peer = try #require(peers.first { $0.uuid == uuid }, "syncd browse in B: \(listing.output)")
            #expect(peer.name == "Alpha Node")
            #expect(peer.port == 5984)
            #expect(peer.addresses.map(\.ip) == [a.ipv4])
            #expect(peer.hostName == "\(a.hostName).local")
            #expect(peer.database == "notes" && peer.usesTLS && peer.fingerprint == id.fingerprint && peer.protocolVersion == 1)
            // For people: the node ID as everything else shows it, not the fingerprint's hex.
            let text = try b.run([try TestBed.syncdExecutable, "browse", "--wait", "2"])
            #expect(text.output.contains("  uuid       \(uuid)\n  id         \(id)\n"), "\(text.output)")

            // avahi-browse in C.
            var avahiLine: String?
            for _ in 0..<10 where avahiLine == nil {
                let browse = try c.run(["/usr/bin/avahi-browse", "-rpt", "_syncd._tcp"], check: false, timeout: .seconds(15))
                avahiLine = browse.output.split(separator: "\n").map(String.init).first { $0.hasPrefix("=") && $0.contains("uuid=\(uuid)") }
            }
            let fields = try #require(avahiLine, "avahi-browse in C never resolved the service").split(separator: ";").map(String.init)
            #expect(fields[3] == "Alpha\\032Node")
            #expect(fields[7] == a.ipv4 && fields[8] == "5984")
            #expect(fields[9].contains("\"db=notes\"") && fields[9].contains("\"tls=1\"") && fields[9].contains("\"fp=\(id.fingerprint)\""))

            // python-zeroconf, an independent mDNS implementation, in C.
            let zeroconf = try c.run(["/usr/bin/env", "python3", "-c", Self.zeroconfScript, c.ipv4, uuid], check: false, timeout: .seconds(20))
            #expect(zeroconf.status == 0, "zeroconf: \(zeroconf.errorOutput)")
            let found = try JSONSerialization.jsonObject(with: Data(zeroconf.output.utf8)) as? [String: Any]
            #expect(found?["port"] as? Int == 5984)
            #expect((found?["addresses"] as? [String])?.contains(a.ipv4) == true)
            #expect((found?["txt"] as? [String: String])?["db"] == "notes")
            #expect(found?["name"] as? String == "Alpha Node._syncd._tcp.local.")
        }
    }

    @Test func addressChangeReachesBrowserWithinFiveSeconds() async throws {
        try await TestBed.with(hosts: 2) { bed in
            let (a, b) = (bed["a"], bed["b"])
            let uuid = newUUID()
            let watcher = try b.watchPeers()
            _ = try a.advertise(uuid: uuid, port: 7000)
            let (appearedAt, _) = try await watcher.waitForEvent { $0.event == "appeared" && $0.peer?.uuid == uuid }
            try a.setIPv4("10.213.0.99")
            let (_, changed) = try await watcher.waitForEvent(from: appearedAt + 1, timeout: .seconds(5)) {
                $0.event == "changed" && $0.peer?.uuid == uuid
                    && $0.peer?.addresses.map(\.ip) == ["10.213.0.99"]
            }
            #expect(changed.peer?.port == 7000)
            #expect(!watcher.events[appearedAt...].contains { $0.event == "gone" }, "an address change is not a departure")
        }
    }

    @Test func sameNameOnTwoHostsEndsWithBothAdvertised() async throws {
        try await TestBed.with(hosts: 3) { bed in
            let (first, second) = (newUUID(), newUUID())
            let one = try bed["a"].advertise(uuid: first, port: 6001, name: "Shared Name")
            let two = try bed["b"].advertise(uuid: second, port: 6002, name: "Shared Name")
            try await one.waitForEvent { $0.event == "established" }
            try await two.waitForEvent { $0.event == "established" }
            let renamed = (one.events + two.events).filter { $0.event == "renamed" }
            #expect(!renamed.isEmpty, "a side gave way")

            let watcher = try bed["c"].watchPeers()
            try await watcher.waitForEvent { $0.event == "appeared" && $0.peer?.uuid == first }
            try await watcher.waitForEvent { $0.event == "appeared" && $0.peer?.uuid == second }
            let names = Set(watcher.events.compactMap { $0.event == "appeared" ? $0.peer?.name : nil })
            #expect(names.count == 2 && names.allSatisfy { $0.hasPrefix("Shared Name") }, "\(names)")
        }
    }

    @Test func restartedDaemonGetsTheServiceBackByItself() async throws {
        try await TestBed.with(hosts: 2) { bed in
            let (a, b) = (bed["a"], bed["b"])
            let uuid = newUUID()
            let advertiser = try a.advertise(uuid: uuid, port: 6100)
            let watcher = try b.watchPeers()
            let (first, _) = try await advertiser.waitForEvent { $0.event == "established" }
            let (appeared, _) = try await watcher.waitForEvent { $0.event == "appeared" && $0.peer?.uuid == uuid }

            a.stopAvahi()
            let (lost, _) = try await advertiser.waitForEvent(from: first + 1) { $0.event == "unavailable" }
            try await watcher.waitForEvent(from: appeared + 1) { $0.event == "gone" && $0.peer?.uuid == uuid }
            try a.startAvahi()
            try await advertiser.waitForEvent(from: lost + 1) { $0.event == "established" }
            try await watcher.waitForEvent(from: appeared + 1) { $0.event == "appeared" && $0.peer?.uuid == uuid }
            #expect(advertiser.isRunning, "the same syncd process re-registered")
        }
    }

    @Test func syncdStartedBeforeTheDaemonAdvertisesOnceItIsUp() async throws {
        try await TestBed.with(hosts: 2, startAvahi: false) { bed in
            let (a, b) = (bed["a"], bed["b"])
            try b.startAvahi()
            let uuid = newUUID()
            let advertiser = try a.advertise(uuid: uuid, port: 6200)
            let (waiting, event) = try await advertiser.waitForEvent { $0.event == "unavailable" }
            #expect(event.reason == "noDaemon")
            let watcher = try b.watchPeers()
            try a.startAvahi()
            try await advertiser.waitForEvent(from: waiting + 1) { $0.event == "established" }
            try await watcher.waitForEvent { $0.event == "appeared" && $0.peer?.uuid == uuid }
        }
    }

    @Test func withoutDaemonOrBusDiscoveryReportsWhyAndSyncdKeepsRunning() async throws {
        try await TestBed.with(hosts: 2, startAvahi: false, startDBus: false) { bed in
            let (a, b) = (bed["a"], bed["b"])
            try b.startDBus()
            let syncd = try TestBed.syncdExecutable
            for (host, reason) in [(a, "noBus"), (b, "noDaemon")] {
                let browse = try host.run([syncd, "browse", "--json"], check: false)
                #expect(browse.status == 69)
                #expect(EventLine(browse.output)?.reason == reason, "\(browse.output)")
            }
            let advertiser = try a.advertise(uuid: newUUID(), port: 6300)
            let (waiting, event) = try await advertiser.waitForEvent { $0.event == "unavailable" }
            #expect(event.reason == "noBus")
            // No bus is reported, not fatal: once a bus and a daemon are there, it advertises.
            try a.startDBus()
            try a.startAvahi()
            try await advertiser.waitForEvent(from: waiting + 1) { $0.event == "established" }
            #expect(advertiser.isRunning, "no bus is reported, not fatal")
        }
    }

    @Test func linkLocalIPv6AddressesCarryTheirInterface() async throws {
        try await TestBed.with(hosts: 2, ipv6: true) { bed in
            let uuid = newUUID()
            _ = try bed["a"].advertise(uuid: uuid, port: 6400)
            let watcher = try bed["b"].watchPeers()
            let (_, event) = try await watcher.waitForEvent(timeout: .seconds(15)) { event in
                event.peer?.uuid == uuid && event.peer?.addresses.contains { $0.family == .ipv6 } == true
                    && event.peer?.addresses.contains { $0.family == .ipv4 } == true
            }
            let v6 = try #require(event.peer?.addresses.first { $0.family == .ipv6 })
            #expect(v6.isLinkLocal && v6.interfaceName == "eth0")
            #expect(v6.host == "\(v6.ip)%eth0")
            // The scoped address is usable: B connects to a listener in A through it.
            let listener = try bed["a"].spawn(["/usr/bin/env", "python3", "-c", """
                import socket
                s = socket.socket(socket.AF_INET6)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("::", 6400)); s.listen(); print("listening", flush=True)
                c, _ = s.accept(); c.sendall(b"hello from a"); c.close()
                """])
            try await listener.waitForLine(timeout: .seconds(5)) { $0 == "listening" }
            let connect = try bed["b"].run(["/usr/bin/env", "python3", "-c", """
                import socket, sys
                print(socket.create_connection((sys.argv[1], 6400), timeout=3).recv(64).decode())
                """, v6.host], check: false)
            #expect(connect.output == "hello from a", "connect to \(v6.host): \(connect.errorOutput)")
        }
    }

    @Test func separateServiceTypesDoNotSeeEachOther() async throws {
        try await TestBed.with(hosts: 2) { bed in
            let (mine, theirs, later) = (newUUID(), newUUID(), newUUID())
            _ = try bed["a"].advertise(uuid: mine, port: 6500, type: "_syncd-blue._tcp")
            _ = try bed["a"].advertise(uuid: theirs, port: 6501)
            let watcher = try bed["b"].watchPeers(type: "_syncd-blue._tcp")
            try await watcher.waitForEvent { $0.event == "appeared" && $0.peer?.uuid == mine }
            // B knows the other type's service, and a blue one announced after it reaches the
            // blue watcher: had that watcher been told of the other, it would have been before.
            let everyType = try bed["b"].watchPeers()
            try await everyType.waitForEvent { $0.event == "appeared" && $0.peer?.uuid == theirs }
            let laterAdvertiser = try bed["a"].advertise(uuid: later, port: 6502, type: "_syncd-blue._tcp")
            try await watcher.waitForEvent { $0.event == "appeared" && $0.peer?.uuid == later }
            #expect(laterAdvertiser.isRunning)
            #expect(!watcher.events.contains { $0.peer?.uuid == theirs })
        }
    }

    static let zeroconfScript = """
        import json, sys, time
        from zeroconf import IPVersion, ServiceBrowser, ServiceListener, Zeroconf
        interface, uuid = sys.argv[1], sys.argv[2]
        kind = "_syncd._tcp.local."
        zc = Zeroconf(interfaces=[interface], ip_version=IPVersion.V4Only)
        names = set()
        class Listener(ServiceListener):
            def add_service(self, zc, type_, name): names.add(name)
            def update_service(self, zc, type_, name): names.add(name)
            def remove_service(self, zc, type_, name): names.discard(name)
        browser = ServiceBrowser(zc, kind, Listener())
        deadline = time.time() + 10
        while time.time() < deadline:
            for name in list(names):
                info = zc.get_service_info(kind, name, timeout=1000)
                if info and info.properties.get(b"uuid") == uuid.encode():
                    txt = {k.decode(): (v or b"").decode() for k, v in info.properties.items()}
                    print(json.dumps({"name": name, "port": info.port, "addresses": info.parsed_addresses(), "txt": txt}))
                    zc.close()
                    sys.exit(0)
            time.sleep(0.1)
        zc.close()
        sys.exit("zeroconf did not find uuid " + uuid)
        """
}

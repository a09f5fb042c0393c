import Foundation
import Discovery
import Store
import SyncAgent
import Testing

/// `syncd.toml`: every key read, defaults, and errors that name the key.
struct AgentConfigurationTests {
    @Test func aFilterFunctionWithItsQueryParameters() throws {
        let configuration = try AgentConfiguration(toml: """
            [[database]]
            name = "tasks"
            pull_filter = { filter = "app/by_type", query_params = { type = "task" } }
            """)
        #expect(configuration.databases.first?.pullFilter == .function(name: "app/by_type", queryParameters: ["type": "task"]))
    }

    @Test func everyKeyIsRead() throws {
        let configuration = try AgentConfiguration(toml: """
            [node]
            name = "kitchen"
            max_document_size = 1000000
            [listener]
            host = "0.0.0.0"
            port = 7000
            max_request_size = 2000000
            max_attachment_size = 3000000000
            handshake_timeout = 2.5
            request_head_timeout = 3
            idle_timeout = 30
            max_pending_connections = 200
            max_connections = 300
            max_connections_per_client = 20
            max_feeds_per_client = 10
            [discovery]
            enabled = false
            service_type = "_notes._tcp"
            [[database]]
            name = "notes"
            push_filter = { selector = { type = "note" } }
            pull_filter = { doc_ids = ["a", "b"] }
              [[database.peer]]
              peer = "ABCD-EFGH"
              push_filter = { doc_ids = ["shared"] }
            [[database]]
            name = "photos"
            [[peer]]
            peer = "garage"
            addresses = ["10.0.7.2:6984", "[fd00::2]:6984"]
            [[remote]]
            url = "https://couch.example.org:6984/notes"
            database = "notes"
            credentials_file = "/etc/syncd/couch.credentials"
            """)
        #expect(configuration.name == "kitchen")
        #expect(configuration.listenHost == "0.0.0.0" && configuration.listenPort == 7000)
        #expect(configuration.maximumDocumentSize == 1_000_000)
        #expect(configuration.maximumRequestSize == 2_000_000 && configuration.maximumAttachmentSize == 3_000_000_000)
        var limits = ListenerLimits()
        limits.handshakeTimeout = .milliseconds(2500)
        limits.requestHeadTimeout = .seconds(3)
        limits.idleTimeout = .seconds(30)
        limits.maximumPendingConnections = 200
        limits.maximumConnections = 300
        limits.maximumConnectionsPerClient = 20
        limits.maximumFeedsPerClient = 10
        #expect(configuration.listenerLimits == limits)
        let notesType = try ServiceType("_notes._tcp")
        #expect(!configuration.discovery && configuration.serviceType == notesType)
        #expect(configuration.databases.map(\.name) == ["notes", "photos"])
        let notes = try #require(configuration.database("notes"))
        #expect(notes.pushFilter == .selector(["type": "note"]))
        #expect(notes.pullFilter == .documentIDs(["a", "b"]))
        #expect(notes.peerFilters.map(\.peer) == ["ABCD-EFGH"])
        #expect(notes.peerFilters.first?.pushFilter == .documentIDs(["shared"]))
        #expect(notes.peerFilters.first?.pullFilter == nil)
        #expect(configuration.peers == [.init(peer: "garage", addresses: ["10.0.7.2:6984", "[fd00::2]:6984"])])
        #expect(configuration.remotes == [.init(url: "https://couch.example.org:6984/notes", database: "notes",
                                                credentialsFile: "/etc/syncd/couch.credentials")])
    }

    @Test func anEmptyFileIsTheDefaults() throws {
        let configuration = try AgentConfiguration(toml: "")
        #expect(configuration == AgentConfiguration())
        #expect(configuration.listenHost == "::" && configuration.listenPort == 6984 && configuration.discovery)
        #expect(configuration.maximumDocumentSize == 8_000_000 && configuration.maximumAttachmentSize == 1 << 32)
        #expect(configuration.databases.map(\.name) == ["syncd"])
        let missing = try AgentConfiguration.load(path: "/nonexistent/syncd.toml")
        #expect(missing == AgentConfiguration())
    }

    /// The Debian package's commented `/etc/syncd/syncd.toml` parses as it is, and with
    /// every example in it uncommented.
    @Test func thePackagedFileAndItsExamplesParse() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("packaging/syncd.toml"), encoding: .utf8)
        #expect(try AgentConfiguration(toml: text) == AgentConfiguration())
        let examples = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            guard line.hasPrefix("#") else { return line }
            let code = line.dropFirst().drop { $0 == " " }
            return code.wholeMatch(of: /\[\[?[a-z.]+\]\]?|[a-z_]+ = .+/) != nil ? code : line
        }.joined(separator: "\n")
        let configuration = try AgentConfiguration(toml: examples)
        #expect(configuration.name == "kitchen")
        #expect(configuration.databases.first?.peerFilters.first?.peer == "ABCD-EFGH")
        #expect(configuration.peers.first?.addresses == ["192.0.2.7:6984"])
        #expect(configuration.remotes.first?.credentialsFile == "/etc/syncd/couch.credentials")
    }

    @Test(arguments: [
        ("[listener]\nport = \"x\"", "listener.port must be an integer"),
        ("[listener]\nport = 70000", "listener.port must be between 0 and 65535"),
        ("[listener]\nidle_timeout = 0", "listener.idle_timeout must be a number of seconds from 0.001 to 86400"),
        ("[listener]\nidle_timeout = 0.0001", "listener.idle_timeout must be a number of seconds from 0.001 to 86400"),
        ("[listener]\nhandshake_timeout = \"5s\"", "listener.handshake_timeout must be a number of seconds from 0.001 to 86400"),
        ("[listener]\nmax_connections = -1", "listener.max_connections must be positive"),
        ("[listener]\nmax_feeds_per_client = 1.5", "listener.max_feeds_per_client must be an integer"),
        ("[listner]\nport = 1", "unknown key listner (known here: database, discovery, listener, node, peer, remote)"),
        ("[node]\nname = \"\"", "node.name must be 1 to 63 bytes"),
        ("[node]\nmax_document_size = 0", "node.max_document_size must be positive"),
        ("[listener]\nmax_attachment_size = \"4G\"", "listener.max_attachment_size must be an integer"),
        ("[discovery]\nservice_type = \"syncd\"", "discovery.service_type is not valid: invalid DNS-SD service type 'syncd' (expected e.g. _syncd._tcp)"),
        ("[[database]]\npush_filter = { doc_ids = [\"a\"] }", "database[1].name is missing"),
        ("[[database]]\nname = \"Notes\"", "database[1].name 'Notes' is not a valid database name"),
        ("[[database]]\nname = \"a\"\n[[database]]\nname = \"a\"", "database[2].name 'a' is configured twice"),
        ("[[database]]\nname = \"a\"\npull_filter = { doc_ids = [] }", "database[1].pull_filter.doc_ids names no document"),
        ("[[database]]\nname = \"a\"\npull_filter = { selector = 3 }", "database[1].pull_filter.selector must be a table (a Mango selector)"),
        ("[[database]]\nname = \"a\"\npull_filter = { selector = { n = { \"$nope\" = 1 } } }",
         "database[1].pull_filter.selector is not a valid selector: "),
        ("[[database]]\nname = \"a\"\n[[database.peer]]\npush_filter = { doc_ids = [\"x\"] }", "database[1].peer[1].peer is missing (a peer's ID or name)"),
        ("[[database]]\nname = \"a\"\npull_filter = { filter = \"nodesign\" }", "database[1].pull_filter.filter must be \"DESIGN/NAME\": a filter function of _design/DESIGN"),
        ("[[database]]\nname = \"a\"\npull_filter = { filter = \"app/f\", doc_ids = [\"x\"] }", "database[1].pull_filter must have one of selector, doc_ids and filter"),
        ("[[database]]\nname = \"a\"\npull_filter = { doc_ids = [\"x\"], query_params = { a = \"b\" } }", "database[1].pull_filter.query_params goes with filter"),
        ("[[database]]\nname = \"a\"\npull_filter = { filter = \"app/f\", query_params = 3 }", "database[1].pull_filter.query_params must be a table"),
        ("[[peer]]\npeer = \"x\"\naddresses = [\"nowhere\"]", "peer[1].addresses 'nowhere' is not host:port"),
        ("[[remote]]\nurl = \"https://u:secret@h/db\"\ndatabase = \"db\"", "remote[1].url must not hold credentials: put them in credentials_file"),
        ("[[remote]]\nurl = \"ftp://h/db\"\ndatabase = \"db\"", "remote[1].url "),
        ("a = = 1", "not valid TOML at line 1, column 5: "),
    ])
    func errorsNameTheKey(toml: String, message: String) throws {
        let error = #expect(throws: ConfigurationError.self) { try AgentConfiguration(toml: toml) }
        #expect(error?.message.hasPrefix(message) == true, "\(error?.message ?? "no error")")
        #expect(error?.message.contains("secret") == false)
    }
}

/// The address book: sources in order, without repeats, and change notices.
struct AddressBookTests {
    @Test func candidatesComeDiscoveredThenConfiguredThenRecordedWithoutRepeats() async throws {
        let book = AddressBook()
        let uuid = "2c0e11aa22bb33cc44dd55ee66ff7788"
        var changes = book.changes().makeAsyncIterator()
        book.record(uuid: uuid, ["10.0.0.5:6984", "10.0.0.9:6984"])
        #expect(await changes.next() == uuid)
        book.configure(uuid: uuid, ["10.0.0.9:6984", "peer.example:6984"])
        #expect(await changes.next() == uuid)
        let service = ServiceInstance(name: "b", type: .syncd, domain: "local", hostName: "b.local",
                                      addresses: [ServiceAddress(family: .ipv6, ip: "fe80::1", interfaceIndex: 2, interfaceName: "eth0"),
                                                  ServiceAddress(family: .ipv4, ip: "10.0.0.7", interfaceIndex: 2, interfaceName: "eth0")],
                                      port: 6984, txt: ["uuid": uuid])
        let peer = try #require(Peer(service))
        book.discovered(.appeared(peer))
        #expect(await changes.next() == uuid)
        #expect(book.candidates(for: uuid.uppercased()).map(\.address)
                == ["10.0.0.7:6984", "[fe80::1%eth0]:6984", "10.0.0.9:6984", "peer.example:6984", "10.0.0.5:6984"])
        #expect(book.candidates(for: uuid).map(\.source) == [.discovered, .discovered, .configured, .configured, .recorded])
        // The same again is no change; a departure is.
        book.record(uuid: uuid, ["10.0.0.5:6984", "10.0.0.9:6984"])
        book.discovered(.gone(peer))
        #expect(await changes.next() == uuid)
        #expect(book.candidates(for: uuid).map(\.source) == [.configured, .configured, .recorded])
    }
}

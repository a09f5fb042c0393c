import Foundation
import JSON
import Store
import SyncAgent
import TestBed
import XCTest

/// `syncd agent` processes on loopback (discovery off, addresses from pairing):
/// pairing from the printed invitation, sync both ways, filters, one owner per
/// data directory, restarts after SIGKILL, reload, and `syncd status`.
final class AgentTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUp() async throws { directory = try TemporaryDirectory(prefix: "agent") }
    override func tearDown() async throws { directory.remove() }

    /// A configuration on loopback at `port` (0: any), without discovery, plus `extra`.
    static func configuration(port: Int = 0, _ extra: String = "") -> String {
        """
        [listener]
        host = "127.0.0.1"
        port = \(port)
        [discovery]
        enabled = false
        \(extra)
        """
    }

    /// A TCP port free now on loopback.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0 else { throw TestSupportError("cannot bind") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Two agents, B paired with A by A's printed invitation.
    private func pairedAgents(_ configurationA: String = configuration(), _ configurationB: String = configuration())
        async throws -> (AgentProcess, AgentProcess) {
        let a = try await AgentProcess.start(in: directory.path + "/a", configuration: configurationA)
        let b = try await AgentProcess.start(in: directory.path + "/b", configuration: configurationB)
        let invitation = try XCTUnwrap(a.invitation, "A printed no invitation: \(a.process.lines)")
        try b.pair(with: invitation)
        return (a, b)
    }

    func testPairedAgentsSyncBothWaysAndFallQuiet() async throws {
        let (a, b) = try await pairedAgents()
        defer { a.stop(); b.stop() }
        try await a.bulk("syncd", (0..<100).map { ["_id": .string("a\($0)"), "n": .number(Double($0))] })
        try await b.bulk("syncd", (0..<100).map { ["_id": .string("b\($0)")] })
        let all = Set((0..<100).map { "a\($0)" } + (0..<100).map { "b\($0)" })
        try await b.waitUntil("B has every document") { try await b.ids("syncd") == all }
        try await a.waitUntil("A has every document") { try await a.ids("syncd") == all }

        // Edits of one document on both sides: the same winner everywhere, the conflict kept.
        let current = try await a.get("syncd", "a1")
        let revision = try XCTUnwrap(current?["_rev"]?.stringValue)
        try await a.put("syncd", "a1", ["_rev": .string(revision), "side": "a"])
        // B's edit names its parent and its own revision, as a replicator writes it: A's edit may
        // reach B first (within milliseconds), and an edit checked against B's current revision would be refused.
        let parent = String(revision.split(separator: "-")[1])
        try await b.put("syncd", "a1?new_edits=false", ["_rev": .string("2-" + String(repeating: "b", count: 32)), "side": "b",
                                                        "_revisions": ["start": 2, "ids": [.string(String(repeating: "b", count: 32)), .string(parent)]]])
        try await a.waitUntil("both see both edits") {
            let onA = try await a.get("syncd", "a1", query: "?conflicts=true")
            let onB = try await b.get("syncd", "a1", query: "?conflicts=true")
            return onA?["_conflicts"] != nil && onA?["_rev"] == onB?["_rev"] && onA?["_conflicts"] == onB?["_conflicts"]
        }

        // Converged: nothing goes back and forth any more. Once both have read all of the other's
        // feed with nothing left to write, neither sequence has moved.
        let beforeA = try await a.info("syncd")["update_seq"], beforeB = try await b.info("syncd")["update_seq"]
        try await AgentProcess.waitUntilQuiet([a, b])
        let afterA = try await a.info("syncd")["update_seq"], afterB = try await b.info("syncd")["update_seq"]
        XCTAssertEqual(beforeA, afterA, "A's update sequence still moves")
        XCTAssertEqual(beforeB, afterB, "B's update sequence still moves")

        let status = try await b.status()
        XCTAssertEqual(status.peers.map(\.state), ["online"])
        XCTAssertEqual(status.replications.map(\.direction), ["pull"])
        XCTAssertEqual(status.replications.first?.docsWritten, 101, "each of A's revisions crossed to B once")
    }

    func testAPeersFileReplacedByAnotherHandIsActedOnAtOnce() async throws {
        let (a, b) = try await pairedAgents()
        defer { a.stop(); b.stop() }
        try await a.put("syncd", "before", ["n": .number(1)])
        try await b.waitUntil("B has A's document") { try await b.get("syncd", "before") != nil }
        // Idle: no request of B's would meet A's refusal on its own; only a closed connection will.
        try await AgentProcess.waitUntilQuiet([a, b])
        try await assertEqual(try await b.status().peers.map(\.state), ["online"])

        // Another hand (not `syncd peers revoke`) revokes B on A: a file renamed over peers.json.
        let path = a.directory + "/peers.json"
        let paired = try Data(contentsOf: URL(fileURLWithPath: path))
        func replacePeers(with data: Data) throws {
            try data.write(to: URL(fileURLWithPath: path + ".edit"))
            XCTAssertEqual(rename(path + ".edit", path), 0)
        }
        try replacePeers(with: Data(#"{"peers":[]}"#.utf8))
        // A closes B's connections, as for a revocation through A: B's feed ends and A refuses B.
        // The old agent heard of its own changes only, and B's feed stayed open.
        try await b.waitUntil("B is cut off", timeout: .seconds(30)) { try await b.status().peers.map(\.state) == ["offline"] }

        // The same hand pairs them again: A starts pulling from B at once, B gets back in.
        try replacePeers(with: paired)
        try await b.put("syncd", "after", ["n": .number(2)])
        try await a.waitUntil("A has B's document", timeout: .seconds(30)) { try await a.get("syncd", "after") != nil }
        try await b.waitUntil("B is back", timeout: .seconds(30)) { try await b.status().peers.map(\.state) == ["online"] }
    }

    /// A hand edit that breaks `peers.json` (cut short, not JSON, not the peers' shape) leaves the
    /// peers paired and syncing: the agent keeps what the file last held, logs the error once for
    /// each broken version, shows it in `syncd status` (exit 1) until the file is fixed, and writes
    /// nothing over it. An agent that never read the file whole does not start.
    func testAPeersFileBrokenByHandKeepsThePeersAndIsAProblemUntilFixed() async throws {
        let (a, b) = try await pairedAgents()
        defer { a.stop(); b.stop() }
        let path = a.directory + "/peers.json"
        let paired = try Data(contentsOf: URL(fileURLWithPath: path))
        func replacePeers(with data: Data) throws {
            try data.write(to: URL(fileURLWithPath: path + ".edit"))
            XCTAssertEqual(rename(path + ".edit", path), 0)
        }
        func unreadable() async throws -> [String] { try await a.status().unreadableFiles ?? [] }
        try await a.waitUntil("A has B online") { try await a.status().peers.map(\.state) == ["online"] }

        try replacePeers(with: paired.prefix(paired.count / 2))
        let cutShort = "cannot read \(path): it is not JSON (cut short, or edited by hand)"
        try await a.waitUntil("A shows peers.json unreadable") { try await unreadable() == [cutShort] }
        let shown = try a.syncd(["status"])
        XCTAssertEqual(shown.status, 1, shown.output)
        XCTAssertTrue(shown.output.contains("Problems (1):\n  ! cannot read "), shown.output)
        try await assertEqual(try await a.status().problems, ["\(cutShort); what it last held is in use"])
        // B is still A's peer: what it writes arrives, and A's status still lists it.
        try await b.put("syncd", "while-broken", [:])
        try await a.waitUntil("A has B's document", timeout: .seconds(30)) { try await a.get("syncd", "while-broken") != nil }
        try await assertEqual(try await a.status().peers.count, 1)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), paired.prefix(paired.count / 2), "A wrote over the broken file")

        try replacePeers(with: Data(#"{"peers": 5}"#.utf8))
        try await a.waitUntil("A shows the new error") { try await unreadable().first?.contains("at .peers") == true }
        XCTAssertEqual(a.process.errorText.components(separatedBy: "cannot read \(path)").count - 1, 2,
                       "one log line for each broken version: \(a.process.errorText)")

        try replacePeers(with: paired)
        try await a.waitUntil("A shows no problem") { try await unreadable().isEmpty }
        XCTAssertEqual(try a.syncd(["status"]).status, 0)
        a.stop()
        try replacePeers(with: Data("not json".utf8))
        let refused = try runCommand([try TestBed.syncdExecutable, "agent", "--data", a.directory], check: false)
        XCTAssertEqual(refused.status, 78, refused.errorOutput)
        XCTAssertEqual(refused.errorOutput, "error: cannot read \(path): it is not JSON (cut short, or edited by hand)\n")
    }

    func testANodesConfiguredNameIsTheOnePrintedAndTheOneItsPeerRecords() async throws {
        // B has a name of its own; it pairs by `syncd pair URL`, a command run beside its agent.
        let (a, b) = try await pairedAgents(Self.configuration(), Self.configuration("[node]\nname = \"kitchen\""))
        defer { a.stop(); b.stop() }
        try await a.waitUntil("A knows its peer") { try await !a.status().peers.isEmpty }
        let peers = try await a.status().peers
        XCTAssertEqual(peers.map(\.name), ["kitchen"])
        let id = try SyncdCommand.run(["id", "--data", b.directory])
        XCTAssertEqual(id.status, 0, id.error)
        XCTAssertTrue(id.output.hasPrefix("name    kitchen\n"), id.output)
    }

    func testPushAndPullFiltersLetExactlyTheMatchingDocumentsCross() async throws {
        // A offers only public documents; A takes only `wanted` from its peers.
        let (a, b) = try await pairedAgents(Self.configuration("""
            [[database]]
            name = "syncd"
            push_filter = { selector = { type = "public" } }
            pull_filter = { doc_ids = ["wanted"] }
            """))
        defer { a.stop(); b.stop() }
        try await a.bulk("syncd", [["_id": "p1", "type": "public"], ["_id": "s1", "type": "secret"], ["_id": "p2", "type": "public"]])
        try await b.bulk("syncd", [["_id": "wanted"], ["_id": "unwanted"]])
        try await b.waitUntil("B has A's public documents") { try await b.ids("syncd").isSuperset(of: ["p1", "p2"]) }
        try await a.waitUntil("A has the wanted document") { try await a.ids("syncd").contains("wanted") }
        // Each side has read all of the other's feed: what has not crossed now never will.
        try await AgentProcess.waitUntilQuiet([a, b], filtered: true)
        let onB = try await b.ids("syncd")
        let onA = try await a.ids("syncd")
        XCTAssertEqual(onB, ["p1", "p2", "wanted", "unwanted"])
        XCTAssertEqual(onA, ["p1", "s1", "p2", "wanted"])
    }

    /// An invitation is a secret: written into a file (as systemd writes the output into the
    /// journal) the agent prints none, and says how to get one.
    func testAnAgentWhoseOutputIsNoTerminalPrintsNoInvitation() async throws {
        let a = try await AgentProcess.start(in: directory.path + "/a", configuration: Self.configuration(), showsInvitation: false)
        let output = a.process.lines.joined(separator: "\n")
        XCTAssertEqual(a.stop(), 0)
        XCTAssertNil(a.invitation)
        XCTAssertFalse(output.contains("/#"), output)
        XCTAssertTrue(output.contains("No peers yet: run `syncd pair` for an invitation"), output)
        // Nor was one made: the directory holds no invitation to use.
        let invitations = (try? String(contentsOfFile: a.directory + "/invitations.json", encoding: .utf8)) ?? ""
        XCTAssertFalse(invitations.contains("secret_sha256"), invitations)
    }

    func testASecondAgentRefusesAndReplicateGoesThroughTheRunningAgent() async throws {
        let a = try await AgentProcess.start(in: directory.path + "/a", configuration: Self.configuration())
        defer { a.stop() }
        let second = try runCommand([try TestBed.syncdExecutable, "agent", "--data", a.directory], check: false)
        XCTAssertNotEqual(second.status, 0)
        XCTAssertTrue(second.errorOutput.contains("another syncd (pid \(a.process.pid)) is serving the data directory"), second.errorOutput)

        try await a.bulk("syncd", (0..<50).map { ["_id": .string("d\($0)")] })
        let replicated = try a.syncd(["replicate", "syncd", "copy"])
        XCTAssertEqual(replicated.status, 0, replicated.output + replicated.errorOutput)
        let copied = try await a.ids("copy")
        XCTAssertEqual(copied.count, 50)
        // The agent's own writes still work afterwards (no "database is locked").
        try await a.put("copy", "after", ["ok": true])
        try await a.put("syncd", "after", ["ok": true])
        let copiedAfter = try await a.ids("copy")
        XCTAssertEqual(copiedAfter.count, 51)
    }

    func testSIGKILLedAgentLosesNoAcknowledgedWriteAndResumesFromItsCheckpoint() async throws {
        let portB = try Self.freePort()
        let (a, b) = try await pairedAgents(Self.configuration(port: try Self.freePort()), Self.configuration(port: portB))
        defer { a.stop() }
        try await a.bulk("syncd", (0..<300).map { ["_id": .string("a\($0)"), "pad": .string(String(repeating: "x", count: 2000))] })
        try await b.bulk("syncd", (0..<20).map { ["_id": .string("b\($0)")] })
        try await b.waitUntil("B is replicating") { try await b.ids("syncd").count > 40 }
        kill(b.process.pid, SIGKILL)
        _ = b.process.waitForExit(timeout: .seconds(10))

        let restarted = try await AgentProcess.start(in: b.directory)
        defer { restarted.stop() }
        let all = Set((0..<300).map { "a\($0)" } + (0..<20).map { "b\($0)" })
        try await restarted.waitUntil("B has everything") { try await restarted.ids("syncd") == all }
        try await a.waitUntil("A has B's acknowledged writes") { try await a.ids("syncd") == all }
        let pulled = try await restarted.status().replications.first
        XCTAssertLessThan(pulled?.docsWritten ?? 0, 300, "B started over instead of resuming from its checkpoint")
    }

    func testStatusTellsWhetherAnAgentRunsAndWhatNeedsAttention() async throws {
        let none = try runCommand([try TestBed.syncdExecutable, "status", "--data", directory.path + "/none"], check: false)
        XCTAssertEqual(none.status, 3)
        let noAgent = "no syncd agent is running (no control socket at \(directory.path)/none/control.sock): start one with "
            + "`syncd agent`, or `systemctl start syncd` where the package is installed"
        XCTAssertEqual(none.errorOutput, noAgent + "\n")
        let noneAsJSON = try runCommand([try TestBed.syncdExecutable, "status", "--json", "--data", directory.path + "/none"], check: false)
        XCTAssertEqual(noneAsJSON.status, 3)
        XCTAssertEqual(noneAsJSON.errorOutput, "")
        XCTAssertEqual(try JSON(parsing: noneAsJSON.output), ["error": "no_agent", "reason": .string(noAgent)])

        let (a, b) = try await pairedAgents()
        defer { a.stop() }
        try await b.waitUntil("B sees A online") { try await b.status().peers.first?.state == "online" }
        let healthy = try b.syncd(["status"])
        XCTAssertEqual(healthy.status, 0, healthy.output)
        XCTAssertTrue(healthy.output.contains("Peers (1):"), healthy.output)
        XCTAssertTrue(healthy.output.contains("\n  syncd <- "), healthy.output)
        XCTAssertTrue(healthy.output.contains(" online 127.0.0.1:\(a.port) connected\n"), healthy.output)
        let json = try b.syncd(["status", "--json"])
        let status = try AgentStatus.decoder.decode(AgentStatus.self, from: Data(json.output.utf8))
        XCTAssertEqual(status.node.urls, b.urls)
        XCTAssertEqual(status.databases.map(\.name), ["syncd"])

        b.stop()
        try await a.waitUntil("A sees B offline", timeout: .seconds(90)) { try await a.status().peers.first?.state == "offline" }
        let attention = try a.syncd(["status"])
        XCTAssertEqual(attention.status, 1)
        XCTAssertTrue(attention.output.contains("Problems (1):\n  ! peer "), attention.output)
    }

    /// avahi-daemon unreachable from the start (a system bus that is not there): the agent
    /// serves, says so in `syncd status`, and warns once however often it retries.
    func testDiscoveryUnavailableAtStartIsWarnedOnce() async throws {
        let configuration = "[listener]\nhost = \"127.0.0.1\"\nport = 0\n"
        let agent = try await AgentProcess.start(in: directory.path + "/a", configuration: configuration,
                                                 environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(directory.path)/no-bus"])
        defer { agent.stop() }
        try await agent.waitUntil("discovery is unavailable") { try await agent.status().discovery.state == "unavailable" }
        // A bus appears where the agent looks for one, still without avahi-daemon: a retry finds it
        // and waits for the daemon. The reason changes; the state does not, and is not warned again.
        let busConfiguration = directory.path + "/bus.conf"
        try """
            <busconfig>
              <type>custom</type>
              <listen>unix:path=\(directory.path)/no-bus</listen>
              <auth>EXTERNAL</auth>
              <policy context="default"><allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/></policy>
            </busconfig>
            """.write(toFile: busConfiguration, atomically: true, encoding: .utf8)
        let bus = try ChildProcess(["/usr/bin/dbus-daemon", "--config-file=\(busConfiguration)", "--nofork", "--nosyslog"])
        defer { bus.stop(grace: .seconds(1)) }
        try await agent.waitUntil("a retry finds the bus and waits for avahi-daemon", timeout: .seconds(20)) {
            try await agent.status().discovery.reason?.contains("avahi-daemon is not running") == true
        }
        let warnings = agent.process.errorText.split(separator: "\n").filter { $0.contains("discovery unavailable") }
        XCTAssertEqual(warnings.count, 1, agent.process.errorText)
        let state = try await agent.status().discovery.state
        XCTAssertEqual(state, "unavailable")
        let status = try agent.syncd(["status"])
        XCTAssertTrue(status.output.contains("Discovery: unavailable"), status.output)
    }

    func testReloadAddsADatabaseWithoutRestartingTheOthers() async throws {
        let (a, b) = try await pairedAgents()
        defer { a.stop(); b.stop() }
        try await a.bulk("syncd", (0..<10).map { ["_id": .string("d\($0)")] })
        try await b.waitUntil("B has A's documents") { try await b.ids("syncd").count == 10 }
        let shared = """
            [[database]]
            name = "syncd"
            [[database]]
            name = "notes"
            """
        for agent in [a, b] {
            try Self.configuration(shared).write(toFile: agent.directory + "/syncd.toml", atomically: true, encoding: .utf8)
        }
        // B by signal, which returns before the reload is applied: wait for the agent to say it is done.
        b.process.signal(SIGHUP)
        try await b.waitUntil("B reloads") { b.process.errorText.contains("configuration reloaded") }
        // A by `syncd reload`, which returns once it is applied: the new database is there at once.
        let reload = try a.syncd(["reload"])
        XCTAssertEqual(reload.status, 0, reload.errorOutput)
        XCTAssertEqual(reload.output, "configuration reloaded")
        try await a.put("notes", "n1", ["text": "hello"])
        try await b.waitUntil("B has the new database's document") { try await b.get("notes", "n1") != nil }
        let replications = try await b.status().replications
        XCTAssertEqual(replications.map(\.database), ["notes", "syncd"])
        XCTAssertEqual(replications.last?.docsWritten, 10, "the unchanged replication was restarted")

        // An invalid file changes nothing and says which key is wrong.
        try "[listener]\nport = \"x\"\n".write(toFile: b.directory + "/syncd.toml", atomically: true, encoding: .utf8)
        let refused = try b.syncd(["reload"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.errorOutput.hasPrefix("configuration not reloaded: "), refused.errorOutput)
        XCTAssertTrue(refused.errorOutput.contains("listener.port must be an integer"), refused.errorOutput)
        // The agent logs the refusal too (its output is read on another thread: wait for it).
        try await b.waitUntil("B logs the refusal") { b.process.errorText.contains("listener.port must be an integer") }
        let unchanged = try await b.status().replications
        XCTAssertEqual(unchanged.count, 2)
        // The same by signal: logged, nothing changed.
        b.process.signal(SIGHUP)
        try await b.waitUntil("B logs the refusal again") {
            b.process.errorText.components(separatedBy: "listener.port must be an integer").count == 3
        }
        let stillTwo = try await b.status().replications
        XCTAssertEqual(stillTwo.count, 2)
    }

    func testTheListenerTakesItsDeadlinesFromTheConfiguration() async throws {
        let agent = try await AgentProcess.start(in: directory.path + "/a", configuration: """
            [listener]
            host = "127.0.0.1"
            port = 0
            handshake_timeout = 0.5
            [discovery]
            enabled = false
            """)
        defer { agent.stop() }
        let url = try XCTUnwrap(agent.urls.first { $0.hasPrefix("https://127.0.0.1") }, "\(agent.urls)")
        // One byte of a TLS record and nothing more: closed after half a second, not the default 5 s.
        let stalled = try RawHTTPConnection(url: url)
        try stalled.write([0x16])
        XCTAssertTrue(stalled.closed(within: .seconds(3)), "the configured handshake timeout closed the stalled connection")
        stalled.close()
    }

    func testAnInvalidConfigurationStopsTheAgentBeforeItStarts() throws {
        let path = directory.path + "/bad"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try "[[database]]\nname = \"notes\"\npush_filter = { selector = { type = \"a\" }, doc_ids = [\"x\"] }\n"
            .write(toFile: path + "/syncd.toml", atomically: true, encoding: .utf8)
        let result = try runCommand([try TestBed.syncdExecutable, "agent", "--data", path], check: false)
        XCTAssertEqual(result.status, 78)
        XCTAssertEqual(result.errorOutput, "error: \(path)/syncd.toml: database[1].push_filter must have one of selector, doc_ids and filter\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "/notes.sqlite"))
    }
}

/// A configured remote: any CouchDB-protocol server, replicated with both ways like a peer.
final class AgentRemoteTests: XCTestCase {
    /// A file (mode 0600) in `directory` holding the test server's admin `user:password`; its path.
    static func adminCredentials(in directory: TemporaryDirectory) throws -> String {
        let credentials = directory.path + "/couch.credentials"
        try "\(TestListener.adminName):\(TestListener.adminPassword)\n".write(toFile: credentials, atomically: true, encoding: .utf8)
        chmod(credentials, 0o600)
        return credentials
    }

    func testAConfiguredRemoteIsKeptTheSameBothWaysWithCredentialsFromAFile() async throws {
        let directory = try TemporaryDirectory(prefix: "remote")
        defer { directory.remove() }
        let server = try await TestListener.start()
        defer { Task { await server.stop() } }
        let credentials = try Self.adminCredentials(in: directory)
        let agent = try await AgentProcess.start(in: directory.path + "/a", configuration: AgentTests.configuration("""
            [[remote]]
            url = "\(server.anonymousURL)/hub"
            database = "syncd"
            credentials_file = "\(credentials)"
            """))
        defer { agent.stop() }
        try await agent.put("syncd", "from-agent", ["n": 1])
        _ = try await HTTP.json(.PUT, server.url + "/hub/from-server", ["n": 2])
        try await agent.waitUntil("the server's document reaches the agent") { try await agent.get("syncd", "from-server") != nil }
        try await agent.waitUntil("the agent's document reaches the server") {
            try await HTTP.json(.GET, server.url + "/hub/from-agent").status == 200
        }
        let replications = try await agent.status().replications
        XCTAssertEqual(replications.map(\.direction), ["pull", "push"])
        XCTAssertEqual(replications.map(\.with), ["\(server.anonymousURL)/hub", "\(server.anonymousURL)/hub"])
        XCTAssertFalse(agent.process.lines.joined().contains(TestListener.adminPassword), "a credential was printed")
        XCTAssertFalse(agent.process.errorText.contains(TestListener.adminPassword), "a credential was logged")
    }

    func testARemoteWhoseFilterChangesOnReloadIsRestartedWithIt() async throws {
        let directory = try TemporaryDirectory(prefix: "remote")
        defer { directory.remove() }
        let server = try await TestListener.start()
        defer { Task { await server.stop() } }
        let credentials = try Self.adminCredentials(in: directory)
        func configuration(_ ids: String) -> String {
            AgentTests.configuration("""
                [[database]]
                name = "syncd"
                push_filter = { doc_ids = [\(ids)] }
                [[remote]]
                url = "\(server.anonymousURL)/hub"
                database = "syncd"
                credentials_file = "\(credentials)"
                """)
        }
        let agent = try await AgentProcess.start(in: directory.path + "/a", configuration: configuration(#""one""#))
        defer { agent.stop() }
        try await agent.put("syncd", "two", [:])
        try await agent.put("syncd", "one", [:])
        try await agent.waitUntil("the server has the document the filter lets through") {
            try await HTTP.json(.GET, server.url + "/hub/one").status == 200
        }
        let before = try await HTTP.json(.GET, server.url + "/hub/two").status
        XCTAssertEqual(before, 404)

        try configuration(#""one", "two""#).write(toFile: agent.directory + "/syncd.toml", atomically: true, encoding: .utf8)
        agent.process.signal(SIGHUP)
        try await agent.waitUntil("the server has the document the new filter lets through") {
            try await HTTP.json(.GET, server.url + "/hub/two").status == 200
        }
    }
}

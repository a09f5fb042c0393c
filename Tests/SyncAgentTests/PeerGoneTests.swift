import Foundation
import JSON
import Store
import SyncAgent
import TestBed
import XCTest

/// What the agent does when a peer goes away and comes back: it backs off instead of
/// hammering the dead address, says why the peer is offline, notices a link cut in
/// silence, and resumes replication after a revoked peer pairs again, all without a restart.
final class PeerGoneTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUp() async throws { directory = try TemporaryDirectory(prefix: "gone") }
    override func tearDown() async throws { directory.remove() }

    /// Two agents on hosts of `bed`, B paired with A, with a first document replicated each way.
    private func pairedAgents(on bed: TestBed) async throws -> (AgentProcess, AgentProcess) {
        let a = try await AgentProcess.start(in: directory.path + "/a", on: bed["a"])
        let b = try await AgentProcess.start(in: directory.path + "/b", on: bed["b"])
        try b.pair(with: try XCTUnwrap(a.invitation))
        try await a.put("syncd", "from-a", [:])
        try await b.put("syncd", "from-b", [:])
        try await a.waitUntil("A has B's document") { try await a.get("syncd", "from-b") != nil }
        try await b.waitUntil("B has A's document") { try await b.get("syncd", "from-a") != nil }
        for agent in [a, b] {
            try await agent.waitUntil("\(agent.directory) follows its peer's feed") {
                let status = try await agent.status()
                return status.peers.first?.state == "online" && status.replications.first?.state == "idle"
            }
        }
        return (a, b)
    }

    func testAStoppedPeerIsShownOfflineWithItsReasonIsNotHammeredAndIsPickedUpWhenItReturns() async throws {
        try await TestBed.with(hosts: 2) { bed in
            let (a, b) = try await pairedAgents(on: bed)
            defer { a.stop() }
            // Killed: its listener closes before its avahi-daemon withdraws it, as when a machine's agent crashes.
            b.process.signal(SIGKILL)
            _ = b.process.waitForExit(timeout: .seconds(10))
            let address = "\(bed["b"].ipv4):6984"
            try await a.waitUntil("A shows B offline, refused", timeout: .seconds(30)) {
                try await a.status().peers.first.map { $0.state == "offline" && $0.reason == "connection refused at \(address)" } ?? false
            }
            let shown = try a.syncd(["status"])
            XCTAssertEqual(shown.status, 1, shown.output)
            XCTAssertTrue(shown.output.split(separator: "\n").contains("  ! peer bhost is offline: connection refused at \(address)"), shown.output)
            for line in shown.output.split(separator: "\n") { XCTAssertLessThanOrEqual(line.count, 80, "too wide: \(line)") }

            // The peer's address is configured on A meanwhile: A tries it at once, then waits again.
            try "[[peer]]\npeer = \"bhost\"\naddresses = [\"\(address)\"]\n".write(toFile: a.directory + "/syncd.toml", atomically: true, encoding: .utf8)
            a.process.signal(SIGHUP)
            try await a.waitUntil("A reloads its configuration") { a.process.errorText.contains("configuration reloaded") }

            // Twenty seconds of the peer being down: A tries again now and then, not hundreds of times a second.
            let before = try bed["a"].tcpConnectionsOpened()
            try await Task.sleep(for: .seconds(20))
            let attempts = try bed["a"].tcpConnectionsOpened() - before
            if ProcessInfo.processInfo.environment["SYNCD_TEST_LOGS"] != nil { print("connections opened in 20 s: \(attempts)") }
            XCTAssertLessThanOrEqual(attempts, 20, "A opened \(attempts) connections to a stopped peer in 20 s")

            let back = try await AgentProcess.start(in: b.directory, on: bed["b"])
            defer { back.stop() }
            try await back.put("syncd", "after-return", [:])
            try await a.waitUntil("A has B's first document after its return", timeout: .seconds(30)) {
                try await a.get("syncd", "after-return") != nil
            }
            try await a.waitUntil("A shows B online") { try await a.status().peers.first?.state == "online" }
        }
    }

    func testASilentCutIsNoticedAndTheDataConvergesAfterIt() async throws {
        try await TestBed.with(hosts: 2) { bed in
            let (a, b) = try await pairedAgents(on: bed)
            defer { a.stop(); b.stop() }
            try bed["b"].dropPackets()
            let cut = ContinuousClock.now
            for index in 0..<10 {
                try await a.put("syncd", "a-cut\(index)", [:])
                try await b.put("syncd", "b-cut\(index)", [:])
            }
            // Each side hears nothing more from the other: its feed's heartbeats stop.
            for (agent, other) in [(a, bed["b"]), (b, bed["a"])] {
                try await agent.waitUntil("\(agent.directory) shows \(other.hostName) offline", timeout: .seconds(45)) {
                    try await agent.status().peers.first?.state == "offline"
                }
                let status = try await agent.status()
                let reason = status.peers.first?.reason ?? ""
                XCTAssertTrue(reason.contains("\(other.ipv4):6984"), "\(status.peers)")
            }
            let noticed = ContinuousClock.now - cut
            try bed["b"].passPackets()
            for agent in [a, b] {
                try await agent.waitUntil("\(agent.directory) converges after the cut", timeout: .seconds(30)) {
                    try await agent.ids("syncd").count == 22
                }
            }
            if ProcessInfo.processInfo.environment["SYNCD_TEST_LOGS"] != nil { print("cut noticed after \(noticed)") }
        }
    }

    func testARevokedPeerThatPairsAgainReplicatesWithoutARestart() async throws {
        let a = try await AgentProcess.start(in: directory.path + "/a", configuration: AgentTests.configuration())
        let b = try await AgentProcess.start(in: directory.path + "/b", configuration: AgentTests.configuration())
        defer { a.stop(); b.stop() }
        try b.pair(with: try XCTUnwrap(a.invitation))
        try await a.put("syncd", "first", [:])
        try await b.waitUntil("B has the first document") { try await b.get("syncd", "first") != nil }

        let bName = try await b.status().node.name
        let removed = try a.syncd(["peers", "remove", bName])
        XCTAssertEqual(removed.status, 0, removed.output + removed.errorOutput)
        try await b.waitUntil("B shows that A refuses it", timeout: .seconds(30)) {
            try await b.status().peers.first.map { $0.state == "offline" && $0.reason?.contains("refuses this node") == true } ?? false
        }

        // A invites again beside its running agent; B joins.
        let inviting = try ChildProcess([try TestBed.syncdExecutable, "pair", "--json", "--address", "127.0.0.1", "--data", a.directory])
        defer { inviting.stop() }
        let (_, line) = try await inviting.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("{") }
        let invitation = try XCTUnwrap(JSON(parsing: line)["url"]?.stringValue)
        try b.pair(with: invitation)
        try await a.put("syncd", "after-pairing-again", [:])
        try await b.put("syncd", "from-b-again", [:])
        try await b.waitUntil("B receives from A again", timeout: .seconds(30)) { try await b.get("syncd", "after-pairing-again") != nil }
        try await a.waitUntil("A receives from B again", timeout: .seconds(30)) { try await a.get("syncd", "from-b-again") != nil }
    }

    func testStatusExitsTwoForAnUnknownPeerAndFourWhenTheSocketIsOutOfReach() async throws {
        let run = directory.path + "/run"
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        chmod(run, 0o750)  // the package's /run/syncd: root and the syncd group only
        let socket = run + "/control.sock"
        let a = try await AgentProcess.start(in: directory.path + "/a", configuration: AgentTests.configuration(),
                                             arguments: ["--control-socket", socket])
        defer { a.stop() }
        let unknown = try runCommand([try TestBed.syncdExecutable, "status", "NOSUCH", "--control-socket", socket], check: false)
        XCTAssertEqual(unknown.status, 2)
        XCTAssertEqual(unknown.errorOutput, "no paired peer matches NOSUCH (see syncd peers)\n")

        let outsider = try runCommand(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                       try TestBed.syncdExecutable, "status", "--control-socket", socket], check: false)
        XCTAssertEqual(outsider.status, 4, outsider.output + outsider.errorOutput)
        XCTAssertTrue(outsider.errorOutput.hasPrefix("not allowed to open the agent's control socket"), outsider.errorOutput)
    }
}

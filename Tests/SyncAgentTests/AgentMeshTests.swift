import Discovery
import Foundation
import JSON
import Store
import SyncAgent
import TestBed
import XCTest

/// `syncd agent` on hosts made of network namespaces, each with its own
/// avahi-daemon (see TestBed): a mesh of three, a peer that moves, a link
/// that is cut, discovery going away.
final class AgentMeshTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUp() async throws { directory = try TemporaryDirectory(prefix: "mesh") }
    override func tearDown() async throws { directory.remove() }

    func testAMeshOfThreeWhereAIsNotPairedWithCConvergesAndFallsQuiet() async throws {
        try await TestBed.with(hosts: 3) { bed in
            let agents = try await AgentProcess.start(on: bed, in: directory.path)
            let (a, b, c) = (agents[0], agents[1], agents[2])
            defer { agents.forEach { $0.stop() } }
            // A–B by the URL A printed; B–C by a QR image of the code `syncd pair` prints on B.
            try b.pair(with: try XCTUnwrap(a.invitation))
            let inviting = try bed["b"].spawn([try TestBed.syncdExecutable, "pair", "--data", b.directory])
            try await inviting.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("https://") }
            let code = inviting.lines.prefix { !$0.hasPrefix("https://") }
            let image = directory.path + "/code.png"
            try Data(PairCommandTests.paint(Array(code))).write(to: URL(fileURLWithPath: image))
            let joined = try c.syncd(["pair", "--image", image])
            XCTAssertEqual(joined.status, 0, joined.output + joined.errorOutput)
            try await inviting.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("paired with ") }

            // Twenty documents, then edited on A and on C at once: conflicts.
            try await b.bulk("syncd", (0..<20).map { ["_id": .string("shared\($0)")] })
            for agent in [a, c] {
                try await agent.waitUntil("the shared documents reach \(agent.directory)") {
                    try await agent.ids("syncd").count == 20
                }
            }
            // A thousand documents on each host, all at once, with the edits.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (name, agent) in [("a", a), ("b", b), ("c", c)] {
                    group.addTask {
                        for batch in 0..<10 {
                            try await agent.bulk("syncd", (0..<100).map { ["_id": .string("\(name)\(batch * 100 + $0)")] })
                        }
                    }
                }
                // Each edit names its parent and its own revision, as a replicator writes it: A and C
                // sync directly (introduced by B), so an edit checked against the current revision
                // could meet the other's edit first and be refused rather than conflict.
                for (name, agent) in [("a", a), ("c", c)] {
                    group.addTask {
                        for index in 0..<20 {
                            let document = try await agent.get("syncd", "shared\(index)")
                            let current = try XCTUnwrap(document?["_rev"]?.stringValue)
                            let parent = String(current.split(separator: "-")[1])
                            let edit = String(repeating: name, count: 32)
                            try await agent.put("syncd", "shared\(index)?new_edits=false", [
                                "_rev": .string("2-" + edit), "_revisions": ["start": 2, "ids": [.string(edit), .string(parent)]],
                                "by": .string(name),
                            ])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let expected = 3020
            for agent in agents {
                try await agent.waitUntil("every document reaches \(agent.directory)", timeout: .seconds(180)) {
                    try await agent.ids("syncd").count == expected
                }
            }
            for index in 0..<20 {
                try await a.waitUntil("shared\(index) has the same winner and conflict everywhere") {
                    var seen: [JSON?] = []
                    for agent in agents { seen.append(try await agent.get("syncd", "shared\(index)", query: "?conflicts=true")) }
                    return seen.allSatisfy { $0 == seen[0] } && seen[0]?["_conflicts"]?.arrayValue?.count == 1
                }
            }
            // Converged: the update sequences stay still. Once every replication has read all of
            // its source's feed with nothing left to write, none has moved.
            var before: [JSON?] = []
            for agent in agents { before.append(try await agent.info("syncd")["update_seq"]) }
            try await AgentProcess.waitUntilQuiet(agents)
            for (agent, sequence) in zip(agents, before) {
                let now = try await agent.info("syncd")["update_seq"]
                XCTAssertEqual(now, sequence, "\(agent.directory) still changes after converging")
            }
        }
    }

    func testAPeerThatMovesIsFollowedAndNothingIsSentTwice() async throws {
        try await TestBed.with(hosts: 2) { bed in
            let agents = try await AgentProcess.start(on: bed, in: directory.path)
            let (a, b) = (agents[0], agents[1])
            defer { agents.forEach { $0.stop() } }
            try b.pair(with: try XCTUnwrap(a.invitation))
            try await b.bulk("syncd", (0..<100).map { ["_id": .string("before\($0)")] })
            try await a.waitUntil("A has B's first documents") { try await a.ids("syncd").count == 100 }

            // B moves while it writes: once A has some of what B writes, and before B is done.
            let writing = Task {
                for batch in 0..<20 {
                    try await b.bulk("syncd", (0..<10).map { ["_id": .string("during\(batch * 10 + $0)")] })
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
            try await a.waitUntil("A has some of what B writes") { try await a.ids("syncd").count >= 120 }
            if ProcessInfo.processInfo.environment["SYNCD_TEST_LOGS"] != nil { print("moving at \(Date())") }
            try bed["b"].setIPv4("10.213.0.77")
            try await writing.value
            try await a.waitUntil("A has everything B wrote, from B's new address", timeout: .seconds(60)) {
                try await a.ids("syncd").count == 300
            }
            let status = try await a.status()
            if ProcessInfo.processInfo.environment["SYNCD_TEST_LOGS"] != nil {
                print("A:\n" + a.process.errorText + "\nB:\n" + b.process.errorText)
            }
            XCTAssertEqual(status.peers.first?.address, "10.213.0.77:6984")
            XCTAssertEqual(status.replications.first?.docsRead, 300, "a document crossed twice (or was missed)")
            // B's status names its new address, as `syncd id` does.
            try await b.waitUntil("B's status shows its new URL", timeout: .seconds(10)) {
                try await b.status().node.urls.contains("https://10.213.0.77:6984")
            }
            XCTAssertTrue(try b.syncd(["status"]).output.contains("  URL   https://10.213.0.77:6984\n"))
            // And B, whose own connections died with its old address, still receives.
            try await a.put("syncd", "after-move", ["ok": true])
            try await b.waitUntil("B receives from A after moving") { try await b.get("syncd", "after-move") != nil }
        }
    }

    func testACutLinkAndAMissingAvahiDaemonHealWithoutHelp() async throws {
        try await TestBed.with(hosts: 2) { bed in
            let agents = try await AgentProcess.start(on: bed, in: directory.path)
            let (a, b) = (agents[0], agents[1])
            defer { agents.forEach { $0.stop() } }
            try b.pair(with: try XCTUnwrap(a.invitation))
            try await a.put("syncd", "first", [:])
            try await b.waitUntil("B has the first document") { try await b.get("syncd", "first") != nil }

            // B is cut off for 30 s while both sides write.
            try bed["b"].linkDown()
            for index in 0..<50 {
                try await a.put("syncd", "a-cut\(index)", [:])
                try await b.put("syncd", "b-cut\(index)", [:])
            }
            try await Task.sleep(for: .seconds(30))
            try bed["b"].linkUp()
            for agent in [a, b] {
                try await agent.waitUntil("\(agent.directory) converges after the cut", timeout: .seconds(90)) {
                    try await agent.ids("syncd").count == 101
                }
            }

            // Without its avahi-daemon, A says why discovery is unavailable and keeps replicating.
            bed["a"].stopAvahi()
            try await a.waitUntil("A reports discovery unavailable") { try await a.status().discovery.state == "unavailable" }
            let status = try await a.status()
            XCTAssertNotNil(status.discovery.reason)
            let shown = try a.syncd(["status"])
            XCTAssertEqual(shown.status, 1)
            XCTAssertTrue(shown.output.contains("! discovery is unavailable: "), shown.output)
            for line in shown.output.split(separator: "\n") { XCTAssertLessThanOrEqual(line.count, 80, "too wide: \(line)") }
            try await b.put("syncd", "without-avahi", [:])
            try await a.waitUntil("A still receives from B") { try await a.get("syncd", "without-avahi") != nil }
            // Said once, however often the agent retries; Avahi's sessions say it only at debug level.
            let said = a.process.errorText.split(separator: "\n").filter { $0.contains("discovery unavailable") }
            XCTAssertEqual(said.count, 1, a.process.errorText)
        }
    }
}

import AsyncHTTPClient
import Foundation
import JSON
import NIOCore
import NIOHTTP1
import Store
import SyncAgent
import TestBed

/// `syncd agent` in the network-namespace test bed (root), through the real command line:
///
/// - pairing done → the first document replicated (fresh agents each run);
/// - a peer's address change → its replication resumed, and documents read twice;
/// - write on A → readable on B through B's API (a longpoll feed), p50/p99;
/// - convergence of 3 × 1,000 concurrent writes through a hub with three peers;
/// - that hub's CPU and RSS while idle (30 s);
/// - a peer gone: stopped for 60 s, and cut off in silence for 30 s (also alone: `agent gone`).
///
/// Alone: `agent burst`, `agent mesh`, `agent catchup`, `agent pairing`, `agent soak`, `agent group` (AgentGroup.swift).
func runAgentBenchmarks(arguments: [String]) async throws {
    if arguments.first == "burst" { return try await agentBurst(arguments: arguments) }
    if arguments.first == "gone" { return try await runPeerGoneBenchmarks() }
    if arguments.first == "mesh" { return try await agentMesh(arguments: arguments) }
    if arguments.first == "catchup" { return try await agentCatchUp(arguments: arguments) }
    if arguments.first == "pairing" { return try await agentPairing(arguments: arguments) }
    if arguments.first == "soak" { return try await agentSoak(arguments: arguments) }
    if arguments.first == "group" { return try await agentGroup(arguments: arguments) }
    let runs = option("runs", in: arguments, default: 3)
    let samples = option("samples", in: arguments, default: 300)
    var pairing: [Double] = []
    var resume: [Double] = []
    var resent = 0
    for run in 0..<runs {
        try await TestBed.with(hosts: 2) { bed in
            let folder = temporaryDirectory("agent-\(run)")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let a = try await BenchAgent.start(folder + "/a", on: bed["a"])
            let b = try await BenchAgent.start(folder + "/b", on: bed["b"])
            defer { a.stop(); b.stop() }
            _ = try await a.send(.PUT, "/syncd/hello", body: "{}")
            let start = now()
            try b.pair(with: try await a.invitation())
            try await b.waitUntil { try await b.send(.GET, "/syncd/hello").status == 200 }
            pairing.append(now() - start)

            // B writes every 20 ms and moves to a new address meanwhile.
            let writer = Task {
                var index = 0
                while !Task.isCancelled {
                    _ = try? await b.send(.PUT, "/syncd/w\(index)", body: "{}")
                    index += 1
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            try await Task.sleep(for: .seconds(2))
            let sequenceBefore = try await b.updateSequence()
            let moved = now()
            try bed["b"].setIPv4("10.213.0.\(90 + run)")
            // Resumed: A holds a document B wrote after it moved.
            try await a.waitUntil(timeout: 60) {
                let changes = try await b.send(.GET, "/syncd/_changes?since=\(sequenceBefore)&limit=1")
                guard let id = changes.json["results"]?.arrayValue?.first?["id"]?.stringValue else { return false }
                return try await a.send(.GET, "/syncd/\(id)").status == 200
            }
            resume.append(now() - moved)
            writer.cancel()
            _ = await writer.result
            // B holds A's `hello` and its own writes; A read each of B's writes once, or some twice.
            let written = try await b.documentCount() - 1
            try await a.waitUntil { try await a.documentCount() == written + 1 }
            let read = try await a.status().replications.first { $0.direction == "pull" }?.docsRead ?? 0
            resent += read - written
        }
    }
    print("syncd agent in the test bed (network namespaces with avahi-daemons), \(runs) runs")
    figure("pairing -> first document replicated, median", percentile(pairing, 50) * 1000, "ms")
    figure("pairing -> first document replicated, max", (pairing.max() ?? .nan) * 1000, "ms")
    figure("peer moved -> replication resumed, median (goal <= 3000)", percentile(resume, 50) * 1000, "ms")
    figure("peer moved -> replication resumed, max", (resume.max() ?? .nan) * 1000, "ms")
    figure("documents read twice across the moves (goal 0)", Double(resent), "docs")

    try await meshFigures(label: "", executable: try TestBed.syncdExecutable, samples: samples)
    try await runPeerGoneBenchmarks()
}

/// `agent mesh [--samples 300] [--rounds 1] [--before OLD-SYNCD]`: a hub paired with three
/// spokes in the test bed; write-to-readable latency over one and two hops, and 3 x 1,000
/// documents written on the spokes at once until all four hosts hold them. With `--before`,
/// an older build's mesh runs in alternating rounds.
private func agentMesh(arguments: [String]) async throws {
    let samples = option("samples", in: arguments, default: 300)
    let rounds = option("rounds", in: arguments, default: 1)
    let builds = comparedBuilds(this: try TestBed.syncdExecutable, arguments: arguments)
    print("agent mesh: a hub and 3 spokes in network namespaces, \(samples) latency samples, \(rounds) rounds")
    for round in 0..<rounds {
        for build in round % 2 == 0 ? builds : builds.reversed() {
            try await meshFigures(label: "round \(round + 1), \(build.name): ", executable: build.executable,
                                  samples: samples, measureIdle: false)
        }
    }
}

/// The mesh figures of one build (see ``agentMesh(arguments:)``), each name after `label`.
private func meshFigures(label: String, executable: String, samples: Int, measureIdle: Bool = true) async throws {
    try await TestBed.with(hosts: 4) { bed in
        let folder = temporaryDirectory("agent-mesh")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var agents: [BenchAgent] = []
        for host in bed.hosts { agents.append(try await BenchAgent.start(folder + "/" + host.name, on: host, executable: executable)) }
        defer { agents.forEach { $0.stop() } }
        let hub = agents[0]
        for spoke in agents.dropFirst() {
            try spoke.pair(with: try await hub.newInvitation())
        }
        try await hub.waitUntil { try await hub.status().peers.allSatisfy { $0.state == "online" } }

        // Latency: write on a spoke, read on another spoke, through the hub.
        let (writer, reader) = (agents[1], agents[2])
        _ = try await writer.send(.PUT, "/syncd/warmup", body: "{}")
        try await reader.waitUntil { try await reader.send(.GET, "/syncd/warmup").status == 200 }
        var twoHops: [Double] = []
        var oneHop: [Double] = []
        var sameNode: [Double] = []
        for n in 0..<samples {
            for (source, target, into) in [(writer, reader, 0), (hub, reader, 1), (reader, reader, 2)] {
                let since = try await target.updateSequence()
                let start = now()
                async let arrived = target.send(.GET, "/syncd/_changes?feed=longpoll&since=\(since)&timeout=10000")
                _ = try await source.send(.PUT, "/syncd/s\(n)-\(into)", body: "{}")
                _ = try await arrived
                let milliseconds = (now() - start) * 1000
                switch into {
                case 0: twoHops.append(milliseconds)
                case 1: oneHop.append(milliseconds)
                default: sameNode.append(milliseconds)
                }
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        // The floor: the write and the longpoll on one node, nothing replicated.
        figure(label + "write -> readable on the same node, p50", percentile(sameNode, 50), "ms", decimals: 1)
        figure(label + "write -> readable on a peer, p50 (goal <= 2)", percentile(oneHop, 50), "ms", decimals: 1)
        figure(label + "write -> readable on a peer, p99 (goal <= 5)", percentile(oneHop, 99), "ms", decimals: 1)
        figure(label + "write -> readable two hops away, p50", percentile(twoHops, 50), "ms", decimals: 1)
        figure(label + "write -> readable two hops away, p99", percentile(twoHops, 99), "ms", decimals: 1)

        // Convergence: 1,000 documents on each spoke at once.
        let before = try await hub.documentCount()
        let start = now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, spoke) in agents.dropFirst().enumerated() {
                group.addTask {
                    for batch in 0..<10 {
                        let docs = (0..<100).map { #"{"_id":"c\#(index)-\#(batch * 100 + $0)"}"# }.joined(separator: ",")
                        _ = try await spoke.send(.POST, "/syncd/_bulk_docs", body: #"{"docs":[\#(docs)]}"#)
                    }
                }
            }
            try await group.waitForAll()
        }
        for agent in agents { try await agent.waitUntil(timeout: 300) { try await agent.documentCount() == before + 3000 } }
        figure(label + "3 x 1,000 at once -> on all 4 (goal <= 0.5)", now() - start, "s", decimals: 2)

        // Idle: the hub with three peers, nothing to do.
        guard measureIdle else { return }
        try await Task.sleep(for: .seconds(5))
        let (cpuBefore, idleStart) = (hub.cpuSeconds(), now())
        try await Task.sleep(for: .seconds(30))
        figure(label + "idle hub with 3 peers: CPU", (hub.cpuSeconds() - cpuBefore) / (now() - idleStart) * 100, "%", decimals: 2)
        figure(label + "idle hub with 3 peers: RSS", Double(hub.residentKilobytes()) / 1024, "MB", decimals: 1)
    }
}

/// `agent burst [--docs 20000] [--rounds 3] [--before OLD-SYNCD]`: two paired agents in the test
/// bed; `--docs` documents written on A in one `_bulk_docs`, and the time until all are readable
/// on B. Then B's agent stops and B pulls the same database one-shot (`syncd replicate --peer`,
/// over the same mutual TLS, into a database of its own), so the two rates come from one run.
/// With `--before`, an older build's agents run in alternating rounds.
private func agentBurst(arguments: [String]) async throws {
    let count = option("docs", in: arguments, default: 20_000)
    let rounds = option("rounds", in: arguments, default: 3)
    let builds = comparedBuilds(this: try TestBed.syncdExecutable, arguments: arguments)
    print("agent burst: \(count) documents written on A in one _bulk_docs, until readable on paired B; \(rounds) rounds")
    let documents = (0..<count).map(smallDocument).joined(separator: ",")
    var ratios: [String: [Double]] = [:]
    var bursts: [String: [Double]] = [:]
    for round in 0..<rounds {
        for build in round % 2 == 0 ? builds : builds.reversed() {
            try await TestBed.with(hosts: 2) { bed in
                let folder = temporaryDirectory("agent-burst-\(round)")
                defer { try? FileManager.default.removeItem(atPath: folder) }
                let a = try await BenchAgent.start(folder + "/a", on: bed["a"], executable: build.executable)
                let b = try await BenchAgent.start(folder + "/b", on: bed["b"], executable: build.executable)
                defer { a.stop(); b.stop() }
                _ = try await a.send(.PUT, "/syncd/hello", body: "{}")
                try b.pair(with: try await a.invitation())
                try await b.waitUntil { try await b.send(.GET, "/syncd/hello").status == 200 }

                let start = now()
                let written = try await a.send(.POST, "/syncd/_bulk_docs", body: #"{"docs":[\#(documents)]}"#)
                guard written.status == 201 else { throw BenchError("_bulk_docs answered \(written.status)") }
                let writeTime = now() - start
                try await b.waitUntil(timeout: 600) { try await b.documentCount() == count + 1 }
                let burst = now() - start

                // The same pull one-shot, by B with its agent stopped (so the target is in process, as the agent's is).
                let aID = try await a.status().node.id
                b.stop()
                let pullStart = now()
                let pull = try bed["b"].run([build.executable, "replicate", "--peer", aID, "https://\(bed["a"].ipv4):6984/syncd",
                                             "oneshot", "--data", b.directory], check: false, timeout: .seconds(600))
                guard pull.status == 0 else { throw BenchError("one-shot pull failed: \(pull.errorOutput)") }
                let oneShot = now() - pullStart
                let label = "round \(round + 1), \(build.name)"
                figure("\(label): burst written on A (one _bulk_docs)", writeTime, "s", decimals: 2)
                figure("\(label): burst written on A -> all on B", burst, "s", decimals: 2)
                figure("\(label): one-shot pull of the same database", oneShot, "s", decimals: 2)
                figure("\(label): burst / one-shot rate (goal >= 0.8)", oneShot / burst, "x", decimals: 2)
                ratios[build.name, default: []].append(oneShot / burst)
                bursts[build.name, default: []].append(burst)
            }
        }
    }
    for build in builds {
        figure("\(build.name): burst -> all on B, median", percentile(bursts[build.name] ?? [], 50), "s", decimals: 2)
        figure("\(build.name): burst rate / one-shot rate, median", percentile(ratios[build.name] ?? [], 50), "x", decimals: 2)
    }
    if builds.count == 2 {
        figure("burst time, --before / this build (medians)",
               percentile(bursts[builds[1].name]!, 50) / percentile(bursts[builds[0].name]!, 50), "x", decimals: 2)
    }
    reference("Apache CouchDB 3.5, continuous replication between two nodes, the same 20,000-document burst", "7.3 s")
}

/// `agent catchup [--docs 15000] [--rounds 1] [--before OLD-SYNCD]`: three agents in a line,
/// A - B - C (C is paired with B only). A writes `--docs` documents in batches of 100 (one
/// every 40 ms, so the writes span several checkpoint intervals) while B
/// relays them; C is SIGKILLed once it holds half of them and restarted at once. Printed:
/// the time from C's restart until it holds them all, how many changes C's pull read again
/// (from its checkpoint to what it held at the kill; at most a checkpoint interval's worth),
/// and how many documents it fetched again (none: `_revs_diff` knows what C holds).
private func agentCatchUp(arguments: [String]) async throws {
    let count = option("docs", in: arguments, default: 15_000)
    let rounds = option("rounds", in: arguments, default: 1)
    let builds = comparedBuilds(this: try TestBed.syncdExecutable, arguments: arguments)
    print("agent catchup: \(count) documents written on A, relayed by B to C, which is SIGKILLed and restarted; \(rounds) rounds")
    for round in 0..<rounds {
        for build in round % 2 == 0 ? builds : builds.reversed() {
            try await TestBed.with(hosts: 3) { bed in
                let folder = temporaryDirectory("agent-catchup-\(round)")
                defer { try? FileManager.default.removeItem(atPath: folder) }
                let a = try await BenchAgent.start(folder + "/a", on: bed["a"], executable: build.executable)
                let b = try await BenchAgent.start(folder + "/b", on: bed["b"], executable: build.executable)
                var c = try await BenchAgent.start(folder + "/c", on: bed["c"], executable: build.executable)
                defer { a.stop(); b.stop(); c.stop() }
                try b.pair(with: try await a.newInvitation())
                try c.pair(with: try await b.newInvitation())
                _ = try await a.send(.PUT, "/syncd/hello", body: "{}")
                try await c.waitUntil { try await c.send(.GET, "/syncd/hello").status == 200 }

                let writer = Task {
                    for batch in 0..<(count / 100) {
                        let docs = (0..<100).map { smallDocument(batch * 100 + $0) }.joined(separator: ",")
                        _ = try await a.send(.POST, "/syncd/_bulk_docs", body: #"{"docs":[\#(docs)]}"#)
                        try await Task.sleep(for: .milliseconds(40))
                    }
                }
                try await c.waitUntil(timeout: 300) { try await c.documentCount() > count / 2 }
                c.process.signal(SIGKILL)
                _ = c.process.waitForExit(timeout: .seconds(10))
                try? await c.client.shutdown()
                // What C held when it died, read from its files while no agent owns them.
                let held: Int
                do {
                    let catalog = try Catalog(directory: c.directory)
                    defer { catalog.close() }
                    held = try catalog.database("syncd").info().docCount
                }
                let restart = now()
                c = try await BenchAgent.start(c.directory, on: bed["c"], executable: build.executable, logLevel: "info")
                try await c.waitUntil(timeout: 600) { try await c.documentCount() == count + 1 }
                let caughtUp = now() - restart
                // Where C's pull resumed: B's sequence numbers count its documents one by one.
                let log = c.process.errorText
                guard let match = log.firstMatch(of: /replication starts .*since=(\d+)/), let since = Int(match.1) else {
                    throw BenchError("C's log does not say where its pull resumed")
                }
                try await writer.value
                let read = try await c.status().replications.first { $0.direction == "pull" }?.docsRead ?? 0
                let label = "round \(round + 1), \(build.name)"
                figure("\(label): C held at SIGKILL", Double(held), "docs")
                figure("\(label): C restarted -> holds all \(count + 1)", caughtUp, "s", decimals: 2)
                figure("\(label): changes C read again from B's feed (from its checkpoint)", Double(held - since), "changes")
                figure("\(label): documents C fetched again (goal 0)", Double(read - (count + 1 - held)), "docs")
            }
        }
    }
}

/// A `syncd agent` inside a test-bed host (or on this host, on loopback), reached through its control socket.
final class BenchAgent: Sendable {
    let directory: String
    /// The test-bed host it runs in; `nil`: this host.
    let host: TestHost?
    let process: ChildProcess
    /// The `syncd` it runs (this build's, or an older one's).
    let executable: String
    let client = HTTPClient(eventLoopGroupProvider: .singleton)

    private init(directory: String, host: TestHost?, process: ChildProcess, executable: String) {
        self.directory = directory
        self.host = host
        self.process = process
        self.executable = executable
    }

    /// Starts `syncd agent` on `directory` (in `host`, or on this host when `nil`), first writing
    /// `configuration` (TOML) to its `syncd.toml` when given, and waits until it has started.
    static func start(_ directory: String, on host: TestHost?, executable: String? = nil, logLevel: String = "warning",
                      configuration: String? = nil) async throws -> BenchAgent {
        let executable = try executable ?? TestBed.syncdExecutable
        if let configuration {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try configuration.write(toFile: directory + "/syncd.toml", atomically: true, encoding: .utf8)
        }
        let command = [executable, "agent", "--data", directory, "--log-level", logLevel]
        let process = try host?.spawn(command) ?? ChildProcess(command)
        try await process.waitForLine(timeout: .seconds(60)) { $0.contains("paired peer") || $0.hasPrefix("No peers yet") }
        return BenchAgent(directory: directory, host: host, process: process, executable: executable)
    }

    var base: String { ControlClient(socketPath: directory + "/control.sock").baseURL }

    /// The invitation the agent printed (builds before --show-invitation print one into any
    /// output), else a new one from `syncd pair --json`.
    func invitation() async throws -> String {
        if let line = process.lines.first(where: { $0.hasPrefix("https://") }) { return line }
        return try await newInvitation()
    }

    /// An invitation made by `syncd pair --json` beside the running agent.
    func newInvitation() async throws -> String {
        let command = [executable, "pair", "--json", "--data", directory]
        let pair = try host?.spawn(command) ?? ChildProcess(command)
        let (_, line) = try await pair.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("{") }
        guard let url = (try JSON(parsing: line))["url"]?.stringValue else { throw BenchError("no invitation URL in \(line)") }
        return url
    }

    func pair(with url: String) throws {
        let command = [executable, "pair", url, "--data", directory]
        let result = try host?.run(command, check: false, timeout: .seconds(60)) ?? runCommand(command, check: false, timeout: .seconds(60))
        guard result.status == 0 else { throw BenchError("pairing failed: \(result.errorOutput)") }
    }

    func send(_ method: HTTPMethod, _ path: String, body: String? = nil) async throws -> (status: Int, json: JSON) {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        return (Int(response.status.code), (try? JSON(parsing: bytes.readableBytesView)) ?? .null)
    }

    func updateSequence() async throws -> Int { try await send(.GET, "/syncd").json["update_seq"]?.intValue ?? 0 }
    func documentCount() async throws -> Int { try await send(.GET, "/syncd").json["doc_count"]?.intValue ?? 0 }
    func status() async throws -> AgentStatus { try await ControlClient(socketPath: directory + "/control.sock").status() }

    func waitUntil(_ what: String = #function + " line \(#line)", line: Int = #line, timeout: Double = 60,
                   _ condition: () async throws -> Bool) async throws {
        let deadline = now() + timeout
        while try await !condition() {
            guard now() < deadline else { throw BenchError("line \(line): not within \(timeout) s") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// User and system CPU seconds the agent used so far.
    func cpuSeconds() -> Double { syncd_bench.cpuSeconds(of: process.pid) }

    func residentKilobytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8) else { return 0 }
        let line = text.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? 0
    }

    func stop() {
        process.stop(grace: .seconds(10))
        try? client.syncShutdown()
    }
}

/// A peer stopped for a minute: what its partner spends meanwhile (CPU, TCP connections
/// opened) and how soon the peer's first document arrives once it returns; then a link
/// cut in silence (every packet dropped) for 30 s: how soon each side says the other is
/// offline, and how soon both have each other's writes once the link is back.
func runPeerGoneBenchmarks() async throws {
    try await TestBed.with(hosts: 2) { bed in
        let folder = temporaryDirectory("agent-gone")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let a = try await BenchAgent.start(folder + "/a", on: bed["a"])
        var b = try await BenchAgent.start(folder + "/b", on: bed["b"])
        defer { a.stop(); b.stop() }
        try b.pair(with: try await a.invitation())
        try await a.waitUntil { try await a.status().peers.first?.state == "online" }
        try await b.waitUntil { try await b.status().peers.first?.state == "online" }

        b.stop()
        let (cpuBefore, connectionsBefore, stopped) = (a.cpuSeconds(), try bed["a"].tcpConnectionsOpened(), now())
        try await a.waitUntil { try await a.status().peers.first?.state == "offline" }
        let offline = now() - stopped
        try await Task.sleep(for: .milliseconds(max(0, Int((60 - offline) * 1000))))
        let cpu = (a.cpuSeconds() - cpuBefore) / (now() - stopped) * 100
        let connections = try bed["a"].tcpConnectionsOpened() - connectionsBefore
        b = try await BenchAgent.start(folder + "/b", on: bed["b"])
        let returned = now()
        _ = try await b.send(.PUT, "/syncd/after-return", body: "{}")
        try await a.waitUntil { try await a.send(.GET, "/syncd/after-return").status == 200 }
        let firstDocument = now() - returned
        print("a peer stopped for 60 s, seen from its partner (2 hosts in the test bed)")
        figure("stopped -> partner's status says offline", offline * 1000, "ms")
        figure("partner's CPU over the minute (goal <= 1)", cpu, "%", decimals: 2)
        figure("partner's TCP connects in that minute (goal <= 20)", Double(connections), "connections")
        figure("peer back -> its first document on partner (goal <= 2000)", firstDocument * 1000, "ms")

        try await a.waitUntil { try await a.status().peers.first?.state == "online" }
        try await b.waitUntil { try await b.status().peers.first?.state == "online" }
        try bed["b"].dropPackets()
        let cut = now()
        _ = try await a.send(.PUT, "/syncd/a-during-cut", body: "{}")
        _ = try await b.send(.PUT, "/syncd/b-during-cut", body: "{}")
        var noticed: [Double] = []
        for agent in [a, b] {
            // Not noticed within two minutes: printed as nan.
            let seen = (try? await agent.waitUntil(timeout: 120) { try await agent.status().peers.first?.state == "offline" }) != nil
            noticed.append(seen ? now() - cut : .nan)
        }
        try await Task.sleep(for: .milliseconds(max(0, Int((30 - (now() - cut)) * 1000))))
        try bed["b"].passPackets()
        let restored = now()
        let onA = (try? await a.waitUntil(timeout: 120) { try await a.send(.GET, "/syncd/b-during-cut").status == 200 }) != nil
        let onB = (try? await b.waitUntil(timeout: 120) { try await b.send(.GET, "/syncd/a-during-cut").status == 200 }) != nil
        let converged = onA && onB
        print("a link cut in silence for 30 s (every packet to and from B dropped)")
        figure("cut -> A's status says B offline (goal <= 30000)", noticed[0] * 1000, "ms")
        figure("cut -> B's status says A offline (goal <= 30000)", noticed[1] * 1000, "ms")
        figure("link back -> both have each other's writes (goal <= 3000)", converged ? (now() - restored) * 1000 : .nan, "ms")
    }
}

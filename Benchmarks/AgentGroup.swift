import Foundation
import JSON
import SyncAgent
import TestBed

/// `agent group [--hosts 10] [--docs 1000] [--body 0] [--unplug] [--timeline] [--idle 10] [--hold 0] [--rounds 1] [--before OLD-SYNCD] [--syncd PATH] [--log-level LEVEL]`: a group
/// grown one pairing at a time (issue 21). Each host after the first joins an invitation of a
/// random member; introductions must make the rest. Printed, as the issue's goals state them:
///
/// - the last pairing → every host lists every other (and reaches it);
/// - `--docs` documents written on every host at once → all of them on every host (`--body`:
///   bytes of text in each; over 8 KB they are fetched, not carried in the feeds);
/// - once converged, each agent's CPU over 10 s (max, median) and RSS (max);
/// - the documents all pulls wrote and read against the minimum (each document onto each other
///   host once), and the most any one link carried in one direction against what exists;
/// - with `--unplug`: one host's link down for 30 s while the others write, then the time
///   from its return until every host holds everything.
///
/// With `--before`, each round runs this build and the older one in turn, the same pairings
/// for both, and the convergence times' medians are compared at the end. `--syncd PATH` runs
/// that `syncd` as "this build". `--idle` sets the idle window in seconds; per agent it also
/// prints RSS split into anonymous and file-backed pages, threads, and CPU ticks over the
/// window. `--hold N` keeps the converged group running N seconds more, its agents' PIDs
/// printed, to look at with strace or perf. `--log-level` (`info`, `debug`) runs the agents at
/// that level and prints what each logged while the group formed (who refused whom, and when),
/// then what each logged while it converged.
func agentGroup(arguments: [String]) async throws {
    let count = option("hosts", in: arguments, default: 10)
    let rounds = option("rounds", in: arguments, default: 1)
    guard (2...26).contains(count) else { throw BenchError("--hosts must be between 2 and 26") }
    let builds = comparedBuilds(this: try stringOption("syncd", in: arguments) ?? TestBed.syncdExecutable, arguments: arguments)
    print("agent group: \(count) hosts in network namespaces, each added by one pairing with a random member")
    var converged: [String: [Double]] = [:]
    for round in 1...rounds {
        let inviters = (2..<max(2, count)).map { Int.random(in: 0..<$0) }
        for build in builds {
            print("round \(round), \(build.name) (\(build.executable))")
            converged[build.name, default: []].append(
                try await groupRound(count, inviters: inviters, executable: build.executable, arguments: arguments))
        }
    }
    guard builds.count > 1 else { return }
    for build in builds {
        figure("\(build.name): convergence, median of \(rounds) rounds", median(converged[build.name] ?? []), "s", decimals: 2)
    }
    let ratio = median(converged[builds[1].name] ?? []) / median(converged[builds[0].name] ?? [])
    figure("convergence --before / this build (> 1: this build is faster)", ratio, "x", decimals: 2)
}

/// One group of `count` hosts running `executable`; host `i + 2` joins host `inviters[i]`.
/// Returns the seconds from the writes to every host holding every document.
private func groupRound(_ count: Int, inviters: [Int], executable: String, arguments: [String]) async throws -> Double {
    let docs = option("docs", in: arguments, default: 1000)
    let unplug = arguments.contains("--unplug")
    let logLevel = stringOption("log-level", in: arguments)
    var convergence = Double.nan
    try await TestBed.with(hosts: count) { bed in
        let folder = temporaryDirectory("agent-group")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var agents: [BenchAgent] = []
        for host in bed.hosts {
            agents.append(try await BenchAgent.start(folder + "/" + host.name, on: host, executable: executable, logLevel: logLevel ?? "warning"))
        }
        defer { agents.forEach { $0.stop() } }

        // The group, one pairing per new host.
        var pairings: [String] = []
        let pairingStart = now()
        try agents[1].pair(with: try await agents[0].invitation())
        pairings.append("b-a")
        for index in 2..<count {
            let member = inviters[index - 2]
            try agents[index].pair(with: try await agents[member].newInvitation())
            pairings.append("\(bed.hosts[index].name)-\(bed.hosts[member].name)")
        }
        let lastPairing = now()
        print("pairings (joiner-inviter): \(pairings.joined(separator: " "))")
        figure("\(count - 1) pairings, one after another", lastPairing - pairingStart, "s", decimals: 2)
        var uuids: [String] = []
        for agent in agents { uuids.append(try await agent.status().node.uuid.lowercased()) }
        let listed = try await untilAll(agents, timeout: 120) { index, agent in
            let peers = try await agent.status().peers
            return Set(peers.map { $0.uuid.lowercased() }) == Set(uuids).subtracting([uuids[index]])
        }
        figure("last pairing -> every host lists every other (goal <= 2)", listed - lastPairing, "s", decimals: 2)
        let online = try await untilAll(agents, timeout: 120) { _, agent in
            let peers = try await agent.status().peers
            return peers.count == count - 1 && peers.allSatisfy { $0.state == "online" }
        }
        figure("last pairing -> every host online with every other", online - lastPairing, "s", decimals: 2)
        var printedLines = agents.map { _ in 0 }
        func printLogs() {
            guard logLevel != nil else { return }
            for (index, (agent, host)) in zip(agents, bed.hosts).enumerated() {
                let lines = agent.process.errorText.split(separator: "\n")
                for line in lines.dropFirst(printedLines[index]) { print("  \(host.name): \(line)") }
                printedLines[index] = lines.count
            }
        }
        printLogs()

        // Convergence: `docs` documents on every host at once.
        var before: [[String: (read: Int, written: Int)]] = []
        for agent in agents { before.append(try await pullCounts(agent)) }
        let total = count * docs
        let cpuAtStart = agents.map { $0.cpuSeconds() }
        let start = now()
        let started = agents
        let timeline = arguments.contains("--timeline") ? Task { try await printTimeline(started, from: start, until: total) } : nil
        try await write(docs, on: Array(agents.enumerated()), label: "g", body: option("body", in: arguments, default: 0))
        let writing = now() - start
        if timeline != nil { print(String(format: "  %6.2f s  written on every host", writing)) }
        let converged = try await untilAll(agents, timeout: 600) { _, agent in try await agent.documentCount() == total }
        try await timeline?.value
        convergence = converged - start
        let busy = zip(agents, cpuAtStart).reduce(0) { $0 + $1.0.cpuSeconds() - $1.1 }
        figure("\(docs) docs on each host at once -> all \(total) on every host (goal <= 2)", convergence, "s", decimals: 2)
        figure("of which writing them, 100 per _bulk_docs, as they sync", writing, "s", decimals: 2)
        figure("CPU all agents used until then (this machine: \(ProcessInfo.processInfo.activeProcessorCount) cores)", busy, "s", decimals: 2)
        printLogs()

        // Idle, once every pull is idle and nothing has moved for a second.
        let settled = try await settle(agents)
        try await Task.sleep(for: .seconds(2))
        let idleSeconds = option("idle", in: arguments, default: 10)
        let cpuBefore = agents.map { $0.cpuSeconds() }
        let idleBefore = agents.map { ProcessSample(pid: $0.process.pid) }
        let idleStart = now()
        try await Task.sleep(for: .seconds(idleSeconds))
        let elapsed = now() - idleStart
        let cpu = zip(agents, cpuBefore).map { ($0.cpuSeconds() - $1) / elapsed * 100 }
        let rss = agents.map { Double($0.residentKilobytes()) / 1024 }
        print("per agent after \(idleSeconds) s idle: RSS = anonymous + file-backed (+ shmem), MB; PSS, MB; threads; CPU ticks over the window")
        var pss: [Double] = []
        for (index, agent) in agents.enumerated() {
            let sample = ProcessSample(pid: agent.process.pid)
            let ticks = sample.ticks - idleBefore[index].ticks
            pss.append(Double(sample.pss) / 1024)
            print("  \(bed.hosts[index].name) pid \(agent.process.pid): RSS \(mb(sample.rss)) = \(mb(sample.rssAnon)) + \(mb(sample.rssFile))"
                  + " (+ \(mb(sample.rssShmem))), PSS \(mb(sample.pss)), \(sample.threads) threads, \(ticks) ticks")
        }
        figure("idle CPU per agent over \(idleSeconds) s, max (goal <= 0.1)", cpu.max() ?? .nan, "%", decimals: 2)
        figure("idle CPU per agent over \(idleSeconds) s, median", percentile(cpu, 50), "%", decimals: 2)
        figure("RSS per agent, max (goal <= 64)", rss.max() ?? .nan, "MB", decimals: 1)
        figure("RSS per agent, median", percentile(rss, 50), "MB", decimals: 1)
        // PSS divides each shared page (the executable's, the Swift runtime's) among the agents mapping it.
        figure("PSS per agent (shared pages split), median", percentile(pss, 50), "MB", decimals: 1)

        // Crossings: each document onto each other host once is the minimum.
        var written = 0
        var read = 0
        var busiest = 0
        var overfull: [String] = []
        for (index, counts) in settled.enumerated() {
            for (peer, now) in counts {
                let then = before[index][peer] ?? (0, 0)
                written += now.written - then.written
                read += now.read - then.read
                busiest = max(busiest, now.read - then.read)
                // A link into this host carries at most what the others wrote: more, and a document crossed it twice.
                if now.read - then.read > total - docs { overfull.append("\(peer) -> \(bed.hosts[index].name)") }
            }
        }
        let minimum = total * (count - 1)
        figure("docs written over all pulls (minimum \(minimum))", Double(written), "docs")
        figure("docs read over all pulls: crossings (minimum \(minimum))", Double(read), "docs")
        figure("crossings / minimum (1 = each doc onto each host once)", Double(read) / Double(minimum), "x", decimals: 3)
        figure("CPU per crossing, both ends, during convergence", busy / Double(max(1, read)) * 1_000_000, "us")
        figure("most docs one link carried one way (of \(total - docs) new to it)", Double(busiest), "docs")
        figure("links that carried a doc twice one way (goal 0)", Double(overfull.count), "links")
        if !overfull.isEmpty { print("  over: \(overfull.joined(separator: ", "))") }
        let hold = option("hold", in: arguments, default: 0)
        if hold > 0 {
            print("holding the group \(hold) s: pids \(agents.map { String($0.process.pid) }.joined(separator: " "))")
            try await Task.sleep(for: .seconds(hold))
        }

        guard unplug else { return }
        // One host unplugged for 30 s while the others write, a batch of 10 every 3 s each.
        let cut = count - 1
        let others = Array(agents.enumerated()).filter { $0.offset != cut }
        try bed.hosts[cut].linkDown()
        let cutStart = now()
        for round in 0..<10 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, agent) in others {
                    group.addTask {
                        let batch = (0..<10).map { #"{"_id":"u\#(index)-\#(round * 10 + $0)"}"# }.joined(separator: ",")
                        let answer = try await agent.send(.POST, "/syncd/_bulk_docs", body: #"{"docs":[\#(batch)]}"#)
                        guard answer.status == 201 else { throw BenchError("_bulk_docs answered \(answer.status)") }
                    }
                }
                try await group.waitForAll()
            }
            try await Task.sleep(for: .milliseconds(max(0, Int((Double(round + 1) * 3 - (now() - cutStart)) * 1000))))
        }
        let reachedOthers = try await untilAll(others.map(\.element), timeout: 120) { _, agent in
            try await agent.documentCount() == total + (count - 1) * 100
        }
        try bed.hosts[cut].linkUp()
        let returned = now()
        let back = try await untilAll(agents, timeout: 300) { _, agent in try await agent.documentCount() == total + (count - 1) * 100 }
        print("host \(bed.hosts[cut].name) unplugged for 30 s while the other \(count - 1) wrote 100 docs each")
        figure("the others' writes on all of them, during the cut", reachedOthers - cutStart, "s", decimals: 2)
        figure("link back -> every host holds everything", back - returned, "s", decimals: 2)
    }
    return convergence
}

/// Writes `docs` documents on each of `agents` at once, in `_bulk_docs` of 100.
/// `body`: the bytes of a `text` field in each (over 8 KB: fetched with `_bulk_get`, not carried in the feed).
private func write(_ docs: Int, on agents: [(offset: Int, element: BenchAgent)], label: String, body: Int = 0) async throws {
    let padding = body > 0 ? #","text":"\#(String(repeating: "x", count: body))""# : ""
    try await withThrowingTaskGroup(of: Void.self) { group in
        for (index, agent) in agents {
            group.addTask {
                for start in stride(from: 0, to: docs, by: 100) {
                    let batch = (start..<min(docs, start + 100)).map { #"{"_id":"\#(label)\#(index)-\#($0)"\#(padding)}"# }.joined(separator: ",")
                    let answer = try await agent.send(.POST, "/syncd/_bulk_docs", body: #"{"docs":[\#(batch)]}"#)
                    guard answer.status == 201 else { throw BenchError("_bulk_docs answered \(answer.status)") }
                }
            }
        }
        try await group.waitForAll()
    }
}

/// With `--timeline`: every 250 ms until each agent holds `total` documents, how many the
/// agents hold (least, median, most) and their CPU since the last line.
private func printTimeline(_ agents: [BenchAgent], from start: Double, until total: Int) async throws {
    var cpu = agents.reduce(0) { $0 + $1.cpuSeconds() }
    var last = now()
    while true {
        try await Task.sleep(for: .milliseconds(250))
        var counts: [Double] = []
        for agent in agents { counts.append(Double(try await agent.documentCount())) }
        let (cpuNow, time) = (agents.reduce(0) { $0 + $1.cpuSeconds() }, now())
        print(String(format: "  %6.2f s  docs least %5.0f  median %5.0f  most %5.0f  CPU %4.0f %%",
                     time - start, counts.min() ?? 0, percentile(counts, 50), counts.max() ?? 0, (cpuNow - cpu) / (time - last) * 100))
        (cpu, last) = (cpuNow, time)
        if counts.allSatisfy({ $0 >= Double(total) }) { return }
    }
}

/// Polls `agents` in turn (every 20 ms, so the polling costs them little) until `condition`
/// holds for each; returns when the last one first held.
private func untilAll(_ agents: [BenchAgent], timeout: Double,
                      _ condition: (Int, BenchAgent) async throws -> Bool) async throws -> Double {
    var done = Array(repeating: Double?.none, count: agents.count)
    let deadline = now() + timeout
    while done.contains(where: { $0 == nil }) {
        for (index, agent) in agents.enumerated() where done[index] == nil {
            if try await condition(index, agent) { done[index] = now() }
        }
        guard now() < deadline else {
            throw BenchError("not within \(timeout) s on \(done.enumerated().filter { $0.element == nil }.map { agents[$0.offset].directory })")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
    return done.compactMap { $0 }.max() ?? now()
}

/// The agent's pull replications of `syncd`: documents read and written, by peer name.
private func pullCounts(_ agent: BenchAgent) async throws -> [String: (read: Int, written: Int)] {
    let pulls = try await agent.status().replications.filter { $0.direction == "pull" && $0.database == "syncd" }
    return Dictionary(pulls.map { ($0.with, ($0.docsRead, $0.docsWritten)) }, uniquingKeysWith: { first, _ in first })
}

/// The pull counts once every pull is idle and none has moved for a second (or after 120 s, with those not idle printed).
private func settle(_ agents: [BenchAgent]) async throws -> [[String: (read: Int, written: Int)]] {
    var last: [[String: [Int]]] = []
    var counts: [[String: (read: Int, written: Int)]] = []
    var stableSince = now()
    let deadline = now() + 120
    while true {
        var busy: [String] = []
        counts = []
        for agent in agents {
            let replications = try await agent.status().replications
            busy += replications.filter { $0.state != "idle" }.map {
                "\(agent.host?.name ?? "") \($0.direction) \($0.with) \($0.state) (read \($0.docsRead), pending \($0.changesPending.map(String.init) ?? "?"), "
                    + "checkpoint \($0.checkpointedSeq ?? "none"), error \($0.lastError ?? "none"))"
            }
            counts.append(try await pullCounts(agent))
        }
        let idle = busy.isEmpty
        let flat = counts.map { $0.mapValues { [$0.read, $0.written] } }
        if !idle || flat != last {
            (last, stableSince) = (flat, now())
        } else if now() - stableSince >= 1 {
            return counts
        }
        guard now() < deadline else {
            // Measured anyway, so a stuck replication's cost shows in the idle figures.
            print("the pulls did not settle within 120 s; not idle: \(busy.joined(separator: ", "))")
            return counts
        }
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// One look at a process in /proc: its memory by kind, its threads, and its CPU so far.
/// (Per-thread counters such as context switches are not summed: the executor's idle
/// threads exit, taking theirs along. `perf stat -p` counts them right.)
private struct ProcessSample {
    /// Kilobytes resident: all, anonymous, file-backed, shared memory; and the proportional share (PSS).
    var rss = 0, rssAnon = 0, rssFile = 0, rssShmem = 0, pss = 0
    var threads = 0
    /// User and system clock ticks of all its threads, exited ones included.
    var ticks = 0

    init(pid: Int32) {
        let status = Self.fields(of: "/proc/\(pid)/status")
        rss = status["VmRSS"] ?? 0
        rssAnon = status["RssAnon"] ?? 0
        rssFile = status["RssFile"] ?? 0
        rssShmem = status["RssShmem"] ?? 0
        threads = status["Threads"] ?? 0
        pss = Self.fields(of: "/proc/\(pid)/smaps_rollup")["Pss"] ?? 0
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            ticks = (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
        }
    }

    /// The leading number of each `Name: value` line.
    private static func fields(of path: String) -> [String: Int] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var fields: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].split(whereSeparator: { $0 == " " || $0 == "\t" }).first
            if let value, let number = Int(value) { fields[String(line[..<colon])] = number }
        }
        return fields
    }
}

/// Kilobytes as megabytes, one decimal.
private func mb(_ kilobytes: Int) -> String { String(format: "%.1f", Double(kilobytes) / 1024) }

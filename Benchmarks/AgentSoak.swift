import Foundation
import JSON
import TestBed

/// `agent soak [--minutes 30] [--rate 50]`: three agents in network namespaces, joined by two
/// pairings (a–b, b–c; introductions make the mesh), each writing, editing and deleting its own
/// documents at `--rate` operations a second. Every minute: each agent's RSS and open file
/// descriptors. At the end, once the writers stop: whether the three databases are identical
/// (every id with the same winning revision), and the growth of RSS and descriptors over the
/// last 20 minutes (or the whole run, if shorter).
func agentSoak(arguments: [String]) async throws {
    let minutes = option("minutes", in: arguments, default: 30)
    let rate = option("rate", in: arguments, default: 50)
    print("agent soak: 3 agents (a-b, b-c paired), each writing, editing and deleting \(rate) docs/s for \(minutes) min")
    try await TestBed.with(hosts: 3) { bed in
        let folder = temporaryDirectory("agent-soak")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var agents: [BenchAgent] = []
        for host in bed.hosts { agents.append(try await BenchAgent.start(folder + "/" + host.name, on: host)) }
        defer { agents.forEach { $0.stop() } }
        try agents[1].pair(with: try await agents[0].invitation())
        try agents[2].pair(with: try await agents[1].newInvitation())
        for agent in agents {
            try await agent.waitUntil(timeout: 30) { try await agent.status().peers.filter { $0.state == "online" }.count == 2 }
        }
        print("mesh formed: every agent has both others online")

        let writers = agents.enumerated().map { index, agent in
            Task { try await churn(agent, prefix: "n\(index)-", rate: rate) }
        }
        var samples: [[(rss: Int, fds: Int)]] = Array(repeating: [], count: agents.count)
        let start = now()
        for minute in 1...minutes {
            try await Task.sleep(for: .seconds(Double(minute) * 60 - (now() - start)))
            var line = String(format: "minute %3d:", minute)
            for (index, agent) in agents.enumerated() {
                let sample = (rss: agent.residentKilobytes(), fds: descriptors(of: agent.process.pid))
                samples[index].append(sample)
                // Anonymous memory (heap: caches, buffers) apart from file pages (the mapped database).
                let anonymous = Double(memory(of: agent.process.pid, "RssAnon")) / 1024
                line += String(format: "  %@ %5.1f MB (anon %5.1f) %3d fds", bed.hosts[index].name, Double(sample.rss) / 1024,
                               anonymous, sample.fds)
            }
            print(line)
        }
        var operations = 0
        for writer in writers {
            writer.cancel()
            operations += (try? await writer.value) ?? 0
        }
        figure("operations written (all agents)", Double(operations), "ops")

        // Identical: every id with the same winning revision everywhere, once they stop moving.
        var identical = false
        let deadline = now() + 120
        while now() < deadline {
            var listings: [JSON] = []
            for agent in agents { listings.append(try await agent.send(.GET, "/syncd/_all_docs").json["rows"] ?? .null) }
            if listings.allSatisfy({ $0 == listings[0] }) {
                identical = true
                break
            }
            try await Task.sleep(for: .seconds(1))
        }
        let count = try await agents[0].documentCount()
        print("databases identical at the end (goal yes): \(identical ? "yes" : "no"), \(count) docs")
        let window = min(20, minutes - 1)
        guard window > 0 else { return }
        for index in agents.indices {
            let (first, last) = (samples[index][minutes - 1 - window], samples[index][minutes - 1])
            figure("\(bed.hosts[index].name): RSS growth over the last \(window) min (goal <= 2)",
                   Double(last.rss - first.rss) / 1024, "MB", decimals: 1)
            figure("\(bed.hosts[index].name): descriptor growth over the last \(window) min (goal 0)",
                   Double(last.fds - first.fds), "fds")
        }
    }
}

/// Writes, edits and deletes documents named `prefix…` on `agent` at `rate` a second until
/// cancelled: four in ten create, four edit one of its live documents, two delete one.
/// Returns how many it wrote.
private func churn(_ agent: BenchAgent, prefix: String, rate: Int) async throws -> Int {
    var live: [(id: String, rev: String)] = []
    var generator = SystemRandomNumberGenerator()
    var written = 0
    let interval = 1 / Double(max(rate, 1))
    let start = now()
    while !Task.isCancelled {
        do {
            try await churnOnce()
        } catch {
            if Task.isCancelled { break }
            throw error
        }
        written += 1
        let next = start + Double(written) * interval
        if next > now() { try? await Task.sleep(for: .seconds(next - now())) }
    }
    return written

    /// One operation: a create, an edit or a delete.
    func churnOnce() async throws {
        let roll = Int.random(in: 0..<10, using: &generator)
        if roll < 4 || live.count < 10 {
            let id = prefix + String(written)
            let answer = try await agent.send(.PUT, "/syncd/\(id)", body: #"{"n":\#(written)}"#)
            if let rev = answer.json["rev"]?.stringValue { live.append((id, rev)) }
        } else {
            let index = Int.random(in: 0..<live.count, using: &generator)
            let (id, rev) = live[index]
            if roll < 8 {
                let answer = try await agent.send(.PUT, "/syncd/\(id)", body: #"{"_rev":"\#(rev)","n":\#(written)}"#)
                if let new = answer.json["rev"]?.stringValue { live[index].rev = new }
            } else {
                _ = try await agent.send(.DELETE, "/syncd/\(id)?rev=\(rev)")
                live.remove(at: index)
            }
        }
    }
}

import Foundation

/// `syncd-bench replication oneshot [--docs 100000] [--rounds 3] [--before OLD-SYNCD]`:
/// what a user runs, `syncd replicate URL URL` between two `syncd serve` processes,
/// each build with its own processes and data. With `--before`, an older build runs in
/// alternating rounds in the same sitting, and the ratio is printed. Each round prints
/// the pull rate and the CPU seconds of the source, the target and the replicator.
func replicationOneShot(arguments: [String]) async throws {
    let count = option("docs", in: arguments, default: 100_000)
    let rounds = option("rounds", in: arguments, default: 3)
    let folder = temporaryDirectory("oneshot")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let builds = comparedBuilds(this: BenchProcess.executable, arguments: arguments)
    print("one-shot syncd replicate URL -> URL, \(count) documents of ~\(smallDocument(0).utf8.count) bytes, syncd serve on both ends, \(rounds) rounds")

    // Each build's own source, written through its own listener (so its own store format).
    for (index, build) in builds.enumerated() {
        let source = try BenchProcess.serve(data: "\(folder)/source-\(index)", executable: build.executable)
        defer { source.stop() }
        try await loadSmallDocuments(count: count, into: source.url + "/source")
    }
    var rates: [String: [Double]] = [:]
    for round in 0..<rounds {
        for build in round % 2 == 0 ? builds : builds.reversed() {
            let index = builds.firstIndex { $0.name == build.name }!
            let run = try await timedPull(count: count, source: "\(folder)/source-\(index)",
                                          target: "\(folder)/target-\(index)-\(round)", executable: build.executable)
            rates[build.name, default: []].append(run.rate)
            figure("round \(round + 1), \(build.name): pull", run.rate, "docs/s")
            let perDocs = 100_000 / Double(count)
            print("  CPU s per 100,000 docs: source / target / replicate".padding(toLength: 58, withPad: " ", startingAt: 0)
                  + String(format: "%6.1f / %.1f / %.1f s", run.cpu.source * perDocs, run.cpu.target * perDocs, run.cpu.replicator * perDocs))
        }
    }
    for build in builds {
        figure("\(build.name): median of \(rounds) rounds", median(rates[build.name] ?? []), "docs/s")
    }
    if builds.count == 2 {
        figure("this build / --before (median rates)", median(rates[builds[0].name]!) / median(rates[builds[1].name]!), "x", decimals: 2)
    }
    reference("Apache CouchDB 3.5 one-shot replication, 100,000 small docs", "about 5,000 docs/s")
}

/// Writes `count` small documents through `database`'s `_bulk_docs`, 1,000 per request.
func loadSmallDocuments(count: Int, into database: String) async throws {
    _ = try await BenchHTTP.send("PUT", database)
    for offset in stride(from: 0, to: count, by: 1000) {
        let docs = (offset..<min(offset + 1000, count)).map(smallDocument).joined(separator: ",")
        let status = try await BenchHTTP.send("POST", database + "/_bulk_docs", body: #"{"docs":[\#(docs)]}"#)
        guard status == 201 else { throw BenchError("_bulk_docs answered \(status)") }
    }
}

/// One `syncd replicate` from a `syncd serve` on `source` to one on `target`, all of one build.
private func timedPull(count: Int, source: String, target: String, executable: String) async throws
    -> (rate: Double, cpu: (source: Double, target: Double, replicator: Double)) {
    let a = try BenchProcess.serve(data: source, executable: executable)
    defer { a.stop() }
    let b = try BenchProcess.serve(data: target, executable: executable)
    defer { b.stop() }
    let (sourceBefore, targetBefore) = (cpuSeconds(of: a.pid), cpuSeconds(of: b.pid))
    let start = now()
    let replicator = try BenchProcess.start(["replicate", a.url + "/source", b.url + "/target", "--create-target"],
                                            data: target + "-replicator", executable: executable)
    var replicatorCPU = 0.0
    while replicator.isRunning {
        replicatorCPU = max(replicatorCPU, cpuSeconds(of: replicator.pid))
        try await Task.sleep(for: .milliseconds(20))
    }
    let seconds = now() - start
    guard replicator.wait() == 0 else { throw BenchError("syncd replicate (\(executable)) failed") }
    return (Double(count) / seconds, (cpuSeconds(of: a.pid) - sourceBefore, cpuSeconds(of: b.pid) - targetBefore, replicatorCPU))
}

/// User and system CPU seconds process `pid` has used so far (0 once it is gone).
func cpuSeconds(of pid: Int32) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
    return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// This build's `syncd`, and with `--before OLD-SYNCD` the older one, named as the figures print them.
func comparedBuilds(this executable: String, arguments: [String]) -> [(name: String, executable: String)] {
    [("this build", executable)] + (stringOption("before", in: arguments).map { [("--before", $0)] } ?? [])
}

/// The value of `--name TEXT` in `arguments`, if given.
func stringOption(_ name: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: "--\(name)"), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

import Foundation
import Locking
import Store

/// `query scans [--docs 300000] [--rounds 2] [--scans 2] [--before OLD-SYNCD]`: what long
/// scans do to everyone else. `--scans` clients run unindexed `_find`s (each a pass over
/// every document) back to back through `syncd serve`, one per core by default, while
/// another reads single documents every 10 ms; the reads' latency is printed beside the
/// same reads with nothing else running. An older build serves in alternating rounds.
func runScanBenchmarks(arguments: [String]) async throws {
    let count = option("docs", in: arguments, default: 300_000)
    let rounds = option("rounds", in: arguments, default: 2)
    let scanners = option("scans", in: arguments, default: ProcessInfo.processInfo.activeProcessorCount)
    let reads = option("reads", in: arguments, default: 300)
    let folder = temporaryDirectory("scans")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let data = folder + "/served"
    try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
    let database = try Database.open(path: data + "/db.sqlite", name: "db")
    for offset in stride(from: 0, to: count, by: 1000) {
        _ = try await database.bulkDocs((offset..<min(offset + 1000, count)).map { DocumentUpload(queryDocument($0, count: count)) })
    }
    database.close()
    print("query scans: \(count) documents, \(scanners) clients scanning (unindexed _find) while one reads a document every 10 ms")

    let builds = comparedBuilds(this: BenchProcess.executable, arguments: arguments)
    var generator = SystemRandomNumberGenerator()
    for round in 0..<rounds {
        for build in round % 2 == 0 ? builds : builds.reversed() {
            let server = try BenchProcess.serve(data: data, executable: build.executable)
            defer { server.stop() }
            let reader = BenchClient()
            func readLatencies() async throws -> [Double] {
                var times: [Double] = []
                for _ in 0..<reads {
                    let id = String(format: "doc-%08d", Int.random(in: 0..<count, using: &generator))
                    let begin = now()
                    let status = try reader.sendNow("GET", server.url + "/db/" + id, body: nil)
                    guard status == 200 else { throw BenchError("GET \(id) answered \(status)") }
                    times.append((now() - begin) * 1000)
                    try await Task.sleep(for: .milliseconds(10))
                }
                return times
            }
            let quiet = try await readLatencies()
            let scanQuery = selective(field: "m", from: count / 3, sorted: false).serialized()
            let stop = Locked(false)
            let scanCount = Locked(0)
            let failure = Locked<String?>(nil)
            let finished = DispatchSemaphore(value: 0)
            // Each scanning client on a thread and a connection of its own.
            for _ in 0..<scanners {
                Thread.detachNewThread { [url = server.url] in
                    defer { finished.signal() }
                    let client = BenchClient()
                    while !stop.withLock({ $0 }) {
                        do {
                            let status = try client.sendNow("POST", url + "/db/_find", body: scanQuery)
                            guard status == 200 else { return failure.withLock { $0 = "_find answered \(status)" } }
                            scanCount.withLock { $0 += 1 }
                        } catch {
                            return failure.withLock { $0 = "\(error)" }
                        }
                    }
                }
            }
            let scanStart = now()
            let busy = try await readLatencies()
            stop.withLock { $0 = true }
            for _ in 0..<scanners { await Task.detached { finished.wait() }.value }
            if let failure = failure.withLock({ $0 }) { throw BenchError("a scanning client failed: \(failure)") }
            let scanSeconds = (now() - scanStart) / Double(max(1, scanCount.withLock { $0 })) * Double(scanners)
            let label = "round \(round + 1), \(build.name)"
            figure("\(label): GET a document, quiet, p50", percentile(quiet, 50), "ms", decimals: 2)
            figure("\(label):   quiet p99", percentile(quiet, 99), "ms", decimals: 2)
            figure("\(label): the same during \(scanners) scans, p50", percentile(busy, 50), "ms", decimals: 2)
            figure("\(label):   during scans p99", percentile(busy, 99), "ms", decimals: 2)
            figure("\(label):   during scans max", busy.max() ?? .nan, "ms", decimals: 1)
            figure("\(label): one scan of \(count) (\(scanCount.withLock { $0 }) ran)", scanSeconds, "s", decimals: 2)
        }
    }
}

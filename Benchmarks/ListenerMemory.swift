import Foundation

/// The listener's memory as databases are written through it: a `syncd serve`
/// process gets `--databases` databases of `--docs` documents each over HTTP
/// (`_bulk_docs` of 1,000), and its resident memory is printed after each one
/// and again once the databases have been idle past `--database-idle-time`.
func runListenerMemoryBenchmark(arguments: [String]) async throws {
    let databases = option("databases", in: arguments, default: 10)
    let count = option("docs", in: arguments, default: 100_000)
    let idle = option("idle", in: arguments, default: 5)
    let folder = temporaryDirectory("listener-memory")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    print("listener memory: \(databases) databases of \(count) documents written through syncd serve (--database-idle-time \(idle))")
    let server = try BenchProcess.serve(data: folder, arguments: ["--database-idle-time", String(idle)])
    defer { server.stop() }
    figure("syncd serve RSS at start", Double(memory(of: server.pid, "VmRSS")) / 1024, "MB", decimals: 1)
    for index in 0..<databases {
        let db = server.url + "/db\(index)"
        guard try await BenchHTTP.send("PUT", db) == 201 else { throw BenchError("PUT \(db) failed") }
        for offset in stride(from: 0, to: count, by: 1000) {
            let docs = (offset..<min(offset + 1000, count)).map(smallDocument).joined(separator: ",")
            let status = try await BenchHTTP.send("POST", db + "/_bulk_docs", body: #"{"docs":["# + docs + "]}")
            guard status == 201 else { throw BenchError("_bulk_docs answered \(status)") }
        }
        figure("syncd serve RSS after \(index + 1) databases", Double(memory(of: server.pid, "VmRSS")) / 1024, "MB", decimals: 1)
    }
    try await Task.sleep(for: .seconds(idle + 2))
    figure("syncd serve RSS once they were idle \(idle) s", Double(memory(of: server.pid, "VmRSS")) / 1024, "MB", decimals: 1)
    figure("syncd serve peak RSS (VmHWM)", Double(memory(of: server.pid, "VmHWM")) / 1024, "MB", decimals: 1)
}

import Foundation
import JSON
import Logging
import Store
import SyncAgent

/// The replication benchmarks:
///
/// - `throughput [--docs 100000] [--batch-size 500]`: a one-shot pull of small documents
///   from a `syncd serve` process into this process's store, against the store's own bulk
///   load of the same documents, measured in the same run.
/// - `latency [--samples 300]`: a continuous `syncd replicate` process between two `syncd
///   serve` processes; the time from a write on A until B's HTTP API returns the document.
/// - `rss [--docs 1000000]`: peak resident memory (VmHWM) of a `syncd serve` process and a
///   `syncd replicate` process pulling from it, sampled as the copy progresses.
/// - `attachments-rss [--docs 200] [--size 1048576] [--before PATH]`: peak resident memory of
///   `syncd replicate` pulling documents with large attachments from `syncd serve` (one
///   `_bulk_get` answer per batch); with `--before`, also of that `syncd` binary (an older
///   build), pulling the same documents in the same run.
/// - `oneshot [--docs 100000] [--rounds 3] [--before PATH]`: `syncd replicate URL URL` between
///   two `syncd serve`, this build and `--before`'s in alternating rounds (``replicationOneShot(arguments:)``).
func runReplicationBenchmarks(arguments: [String]) async throws {
    switch arguments.first {
    case "throughput": try await replicationThroughput(arguments: arguments)
    case "latency": try await replicationLatency(arguments: arguments)
    case "rss": try await replicationMemory(arguments: arguments)
    case "attachments-rss": try await attachmentPullMemory(arguments: arguments)
    case "oneshot": try await replicationOneShot(arguments: arguments)
    default:
        print("""
            usage: syncd-bench replication throughput [--docs 100000] [--batch-size 500] [--parallel-fetches 1]
                   syncd-bench replication latency [--samples 300]
                   syncd-bench replication rss [--docs 1000000] [--batch-size 500]
                   syncd-bench replication attachments-rss [--docs 200] [--size 1048576] [--before PATH-TO-OLDER-SYNCD]
                   syncd-bench replication oneshot [--docs 100000] [--rounds 3] [--before PATH-TO-OLDER-SYNCD]
            """)
    }
}

// MARK: Throughput

private func replicationThroughput(arguments: [String]) async throws {
    let count = option("docs", in: arguments, default: 100_000)
    let batchSize = option("batch-size", in: arguments, default: 500)
    let parallelFetches = option("parallel-fetches", in: arguments, default: 1)
    let folder = temporaryDirectory("replication")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    print("replication throughput: \(count) documents of ~\(smallDocument(0).utf8.count) bytes, batches of \(batchSize), \(parallelFetches) parallel fetches")

    // The store's bulk load of the documents (also the source's data).
    let loadRate = try await bulkLoad(count: count, into: folder + "/a", name: "source")

    let server = try BenchProcess.serve(data: folder + "/a")
    defer { server.stop() }
    let catalog = try Catalog(directory: folder + "/b")
    defer { catalog.close() }
    let target = try catalog.create("target")
    let remote = try RemoteEndpoint(url: server.url + "/source")
    var configuration = ReplicationConfiguration(source: remote, target: LocalEndpoint(target))
    configuration.batchSize = batchSize
    configuration.parallelFetches = parallelFetches
    let start = now()
    var logger = Logger(label: "bench.replicator")
    logger.logLevel = .warning
    let status = await Replicator(configuration, logger: logger).run()
    let seconds = now() - start
    await remote.shutdown()
    guard status.lastError == nil, try target.info().docCount == count else {
        print("replication failed: \(status)")
        return
    }
    let pullRate = Double(count) / seconds
    // What a checkpoint adds: the target waits for the disk before each (every 5 s and at the end).
    var syncs: [Double] = []
    for n in 0..<20 {
        try await target.put(["_id": .string("durable-\(n)")])
        let started = now()
        try await target.ensureFullCommit()
        syncs.append(now() - started)
    }
    let sync = percentile(syncs.map { $0 * 1000 }, 50)
    let interval = Double(configuration.checkpointInterval.components.seconds)
    let checkpoints = (seconds / interval).rounded(.down) + 1
    figure("store bulk load (parse + bulkDocs)", loadRate, "docs/s")
    figure("one-shot pull over HTTP, syncd to syncd (goal >= 25000)", pullRate, "docs/s")
    figure("pull time", seconds, "s", decimals: 2)
    figure("pull / bulk load", pullRate / loadRate, "", decimals: 2)
    figure("target made durable before a checkpoint, median of 20", sync, "ms", decimals: 2)
    figure("  share of the pull time (\(Int(checkpoints)) checkpoints)", checkpoints * sync / 1000 / seconds * 100, "%", decimals: 3)
    reference("Apache CouchDB 3.5 one-shot replication, 100,000 small docs", "about 5,000 docs/s")
}

/// Loads `count` small documents into database `name` of a new catalog; returns docs/s.
private func bulkLoad(count: Int, into directory: String, name: String) async throws -> Double {
    let catalog = try Catalog(directory: directory)
    defer { catalog.close() }
    let database = try catalog.create(name)
    let start = now()
    for offset in stride(from: 0, to: count, by: 1000) {
        let documents = try (offset..<min(offset + 1000, count)).map { DocumentUpload(try JSON(parsing: smallDocument($0))) }
        _ = try await database.bulkDocs(documents)
    }
    return Double(count) / (now() - start)
}

// MARK: Latency

private func replicationLatency(arguments: [String]) async throws {
    let samples = option("samples", in: arguments, default: 300)
    let folder = temporaryDirectory("latency")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let a = try BenchProcess.serve(data: folder + "/a")
    defer { a.stop() }
    let b = try BenchProcess.serve(data: folder + "/b")
    defer { b.stop() }
    _ = try await BenchHTTP.send("PUT", a.url + "/live")
    _ = try await BenchHTTP.send("PUT", b.url + "/live")
    let replicator = try BenchProcess.start(["replicate", a.url + "/live", b.url + "/live", "--continuous"], data: folder + "/r")
    defer { replicator.stop() }
    print("continuous replication latency: \(samples) writes on A (syncd serve), read back through B's HTTP API; replicator: syncd replicate --continuous")

    // Warm up: the feed is open and idle once a first document arrives.
    _ = try await BenchHTTP.send("PUT", a.url + "/live/warmup", body: "{}")
    try await BenchHTTP.waitUntilFound(b.url + "/live/warmup", timeout: 30)

    var latencies: [Double] = []
    for n in 0..<samples {
        let id = "sample-\(n)"
        let start = now()
        _ = try await BenchHTTP.send("PUT", a.url + "/live/" + id, body: #"{"n":\#(n)}"#)
        try await BenchHTTP.waitUntilFound(b.url + "/live/" + id, timeout: 10)
        latencies.append((now() - start) * 1000)
        try await Task.sleep(for: .milliseconds(20))
    }
    figure("write on A until readable on B, p50 (goal <= 10)", percentile(latencies, 50), "ms", decimals: 1)
    figure("p90", percentile(latencies, 90), "ms", decimals: 1)
    figure("p99 (goal <= 50)", percentile(latencies, 99), "ms", decimals: 1)
    figure("max", latencies.max() ?? .nan, "ms", decimals: 1)
    reference("Apache CouchDB 3.5 continuous replication, write on A until readable on B", "p50 101 ms, p99 148 ms")
}

// MARK: Memory

private func replicationMemory(arguments: [String]) async throws {
    let count = option("docs", in: arguments, default: 1_000_000)
    let batchSize = option("batch-size", in: arguments, default: 500)
    let folder = temporaryDirectory("rss")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    print("peak RSS while pulling \(count) documents: syncd serve (source) and syncd replicate (pull into a local store)")
    let loadRate = try await bulkLoad(count: count, into: folder + "/a", name: "source")
    figure("source bulk load", loadRate, "docs/s")

    let server = try BenchProcess.serve(data: folder + "/a")
    defer { server.stop() }
    let start = now()
    let replicator = try BenchProcess.start(
        ["replicate", server.url + "/source", "target", "--batch-size", String(batchSize)], data: folder + "/b")
    var nextReport = 0.1
    var peaks = (server: 0, replicator: 0)
    while replicator.isRunning {
        peaks.server = max(peaks.server, memory(of: server.pid, "VmHWM"))
        peaks.replicator = max(peaks.replicator, memory(of: replicator.pid, "VmHWM"))
        let done = Double(replicator.lastCompleted) / Double(count)
        if done >= nextReport {
            print(String(format: "  %3.0f%% copied: serve VmHWM %4d MB, VmRSS %4d MB; replicate VmHWM %4d MB, VmRSS %4d MB", done * 100,
                         peaks.server >> 10, memory(of: server.pid, "VmRSS") >> 10,
                         peaks.replicator >> 10, memory(of: replicator.pid, "VmRSS") >> 10))
            nextReport += 0.1
        }
        try await Task.sleep(for: .milliseconds(100))
    }
    let seconds = now() - start
    figure("replication time", seconds, "s", decimals: 1)
    figure("replication rate", Double(count) / seconds, "docs/s")
    figure("peak RSS, syncd serve (goal <= 150)", Double(peaks.server) / 1024, "MB")
    figure("peak RSS, syncd replicate (goal <= 150)", Double(peaks.replicator) / 1024, "MB")
    print("replicate exit status \(replicator.wait())")
}

/// Documents with one large attachment each, pulled by `syncd replicate` (this build's,
/// and `--before`'s) from `syncd serve`, each process's peak RSS sampled.
private func attachmentPullMemory(arguments: [String]) async throws {
    let count = option("docs", in: arguments, default: 200)
    let size = option("size", in: arguments, default: 1 << 20)
    let before = stringOption("before", in: arguments)
    let folder = temporaryDirectory("attachments-rss")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    print("peak RSS of syncd replicate pulling \(count) documents with a \(size >> 10) KiB attachment each from syncd serve")
    do {
        let catalog = try Catalog(directory: folder + "/a")
        defer { catalog.close() }
        let database = try catalog.create("source")
        var generator = SystemRandomNumberGenerator()
        let block = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for offset in stride(from: 0, to: count, by: 10) {
            let uploads = (offset..<min(offset + 10, count)).map { n -> DocumentUpload in
                var content = block
                content.replaceSubrange(0..<min(8, size), with: withUnsafeBytes(of: UInt64(n)) { Array($0.prefix(size)) })
                return DocumentUpload(["_id": .string("doc\(n)"), "_attachments": [
                    "blob": ["content_type": "application/octet-stream", "data": .string(Data(content).base64EncodedString())],
                ]])
            }
            for result in try await database.bulkDocs(uploads) { _ = try result.result.get() }
        }
    }
    let server = try BenchProcess.serve(data: folder + "/a")
    defer { server.stop() }
    var runs: [(name: String, executable: String)] = [("this build", BenchProcess.executable)]
    if let before { runs.insert(("the --before build", before), at: 0) }
    for (index, (name, executable)) in runs.enumerated() {
        let start = now()
        let replicator = try BenchProcess.start(["replicate", server.url + "/source", "target"],
                                                data: folder + "/b\(index)", executable: executable)
        var peak = 0
        while replicator.isRunning {
            peak = max(peak, memory(of: replicator.pid, "VmHWM"))
            try await Task.sleep(for: .milliseconds(20))
        }
        let seconds = now() - start
        let status = replicator.wait()
        figure("peak RSS, syncd replicate, \(name)\(status == 0 ? "" : " (exit status \(status))")", Double(peak) / 1024, "MB")
        figure("pull time, \(name)", seconds, "s", decimals: 1)
    }
}

/// A `/proc/PID/status` field in kB (VmHWM: peak resident set; VmRSS: now).
func memory(of pid: Int32, _ field: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }
    return 0
}

// MARK: Processes and HTTP

/// A `syncd` child process (the executable beside this one).
final class BenchProcess: @unchecked Sendable {
    let process = Process()
    let output = Pipe()
    /// The URL `syncd serve` printed (with the benchmark admin's credentials once known), read and written under `lock`.
    var url: String { lock.withLock { printedURL } }
    private var printedURL = ""
    private let lock = NSLock()
    private var completed = 0

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    /// For `syncd replicate`: the completed count of its last progress line.
    var lastCompleted: Int { lock.withLock { completed } }

    static var executable: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("syncd").path
    }

    /// `syncd serve` on `data`, with a server admin whose credentials ``url`` carries.
    static func serve(data: String, arguments: [String] = [], executable: String = executable) throws -> BenchProcess {
        // Fewer PBKDF2 rounds than `syncd user add` uses: the benchmark measures replication, not logins.
        try UserStore(directory: data, iterations: 1000).setPassword("bench-password", for: "bench", roles: [UserStore.adminRole])
        let process = try start(["serve", "--port", "0", "--log-level", "error"] + arguments, data: data, executable: executable)
        let deadline = Date().addingTimeInterval(30)
        while process.url.isEmpty && Date() < deadline { usleep(10_000) }
        guard !process.url.isEmpty else { throw BenchError("syncd serve printed no URL") }
        let withCredentials = process.url.replacingOccurrences(of: "://", with: "://bench:bench-password@")
        // An older build from before users (0184c89) refuses credentials it does not know: it is used anonymously.
        let olderBuildWithoutUsers = try executable != Self.executable
            && BenchHTTP.client.sendNow("GET", withCredentials + "/", body: nil) == 401
        if !olderBuildWithoutUsers {
            process.lock.withLock { process.printedURL = withCredentials }
        }
        return process
    }

    static func start(_ arguments: [String], data: String, executable: String = executable) throws -> BenchProcess {
        let child = BenchProcess()
        child.process.executableURL = URL(fileURLWithPath: executable)
        child.process.arguments = arguments + ["--data", data]
        child.process.standardOutput = child.output
        child.process.standardError = FileHandle.standardError
        child.output.fileHandleForReading.readabilityHandler = { [weak child] handle in
            guard let child else { return }
            let text = String(decoding: handle.availableData, as: UTF8.self)
            for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
                if line.hasPrefix("listening on ") {
                    child.lock.withLock { child.printedURL = String(line.dropFirst("listening on ".count)) }
                } else if let colon = line.firstIndex(of: ":"), let slash = line.firstIndex(of: "/"),
                          let number = Int(line[line.index(after: colon)..<slash].trimmingCharacters(in: .whitespaces)) {
                    child.lock.withLock { child.completed = number }
                }
            }
        }
        try child.process.run()
        return child
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Minimal HTTP for the benchmark's own requests (URLSession-free, one connection each).
enum BenchHTTP {
    static let client = BenchClient()

    static func send(_ method: String, _ url: String, body: String? = nil) async throws -> Int {
        try await client.send(method, url, body: body)
    }

    static func waitUntilFound(_ url: String, timeout: Double) async throws {
        let deadline = now() + timeout
        while now() < deadline {
            if try await client.send("GET", url, body: nil) == 200 { return }
        }
        throw BenchError("\(url) did not appear within \(timeout) s")
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A blocking HTTP/1.1 client with one kept-alive connection per origin: little
/// enough overhead that it does not blur a millisecond latency figure.
final class BenchClient: @unchecked Sendable {
    private var sockets: [String: Int32] = [:]
    private let lock = NSLock()

    func send(_ method: String, _ url: String, body: String?) async throws -> Int {
        try sendNow(method, url, body: body)
    }

    /// ``send(_:_:body:)`` for callers outside a task.
    func sendNow(_ method: String, _ url: String, body: String?) throws -> Int {
        try lock.withLock { try exchange(method, url, body: body, retry: true) }
    }

    private func exchange(_ method: String, _ url: String, body: String?, retry: Bool) throws -> Int {
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port else {
            throw BenchError("bad URL \(url)")
        }
        let origin = "\(host):\(port)"
        let socket = try sockets[origin] ?? connect(host: host, port: port)
        sockets[origin] = socket
        let payload = Array((body ?? "").utf8)
        let target = components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        var request = "\(method) \(target) HTTP/1.1\r\nHost: \(origin)\r\nContent-Length: \(payload.count)\r\n"
        if body != nil { request += "Content-Type: application/json\r\n" }
        if let user = components.user {
            request += "Authorization: Basic " + Data("\(user):\(components.password ?? "")".utf8).base64EncodedString() + "\r\n"
        }
        request += "\r\n"
        let bytes = Array(request.utf8) + payload
        do {
            try write(socket, bytes)
            return try readResponse(socket)
        } catch {
            close(socket)
            sockets[origin] = nil
            if retry { return try exchange(method, url, body: body, retry: false) }
            throw error
        }
    }

    private func connect(host: String, port: Int) throws -> Int32 {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { close(descriptor); throw BenchError("cannot connect to \(host):\(port)") }
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return descriptor
    }

    private func write(_ socket: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw BenchError("send failed") }
            offset += sent
        }
    }

    /// Reads one response (Content-Length or chunked) and returns its status.
    private func readResponse(_ socket: Int32) throws -> Int {
        var buffer: [UInt8] = []
        func fill() throws {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(socket, &chunk, chunk.count, 0)
            guard count > 0 else { throw BenchError("connection closed") }
            buffer += chunk[0..<count]
        }
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headerEnd: Int?
        while headerEnd == nil {
            try fill()
            headerEnd = buffer.indices.dropLast(3).first { buffer[$0..<$0 + 4].elementsEqual(separator) }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self).lowercased()
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        var rest = Array(buffer[(headerEnd! + 4)...])
        if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
           let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) {
            buffer = rest
            while buffer.count < length { try fill() }
        } else if head.contains("transfer-encoding: chunked") {
            buffer = rest
            while !(buffer.count >= 5 && buffer.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8))) { try fill() }
        }
        rest = []
        return status
    }
}

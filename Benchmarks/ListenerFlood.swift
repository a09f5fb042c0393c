import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import Store
import SyncAgent

/// A hostile neighbour against `syncd serve --tls` (`syncd-bench listener-flood
/// [--connections 1000] [--addresses 10] [--seconds 60] [--max-pending N]`): `--connections` TCP
/// connections from 127.0.0.2… (`--addresses` of them), each sending one byte
/// of a TLS record and one more every 5 s, never finishing a handshake, and
/// opened again whenever the listener closes them. Printed, without the flood and
/// during it (`--seconds` each): the latency of an innocent HTTPS `GET /` on a new
/// connection once a second, the rate of a paired peer's continuous replication
/// (batches of 1,000 documents written on the listener until all are on the peer),
/// and the listener's RSS and open descriptors, also once the flood has ended.
func runListenerFloodBenchmark(arguments: [String]) async throws {
    let connections = option("connections", in: arguments, default: 1000)
    let addresses = option("addresses", in: arguments, default: 10)
    let seconds = option("seconds", in: arguments, default: 60)
    let pending = option("max-pending", in: arguments, default: ListenerConfiguration().limits.maximumPendingConnections)
    let folder = temporaryDirectory("listener-flood")
    defer { try? FileManager.default.removeItem(atPath: folder) }

    // The listener (a process) and its paired peer (this process), paired by hand.
    let listenerIdentity = try NodeIdentity.loadOrCreate(in: folder + "/a")
    let peerIdentity = try NodeIdentity.loadOrCreate(in: folder + "/b")
    let listenerCatalog = try Catalog(directory: folder + "/a")
    _ = try listenerCatalog.create("notes")
    listenerCatalog.close()
    try PeerStore(directory: folder + "/a").add(PairedPeer(uuid: peerIdentity.uuid, id: peerIdentity.id, name: "peer",
                                                           addresses: [], databases: ["notes"]))
    let server = try BenchProcess.serve(data: folder + "/a", arguments: ["--tls", "--max-pending-connections", String(pending)])
    defer { server.stop() }
    let port = Int(server.url.split(separator: ":").last ?? "") ?? 0
    let base = "https://127.0.0.1:\(port)"
    print("listener flood: syncd serve --tls --max-pending-connections \(pending); \(connections) connections from \(addresses) addresses trickling a byte every 5 s, \(seconds) s")

    var tls = try TLSSettings.client(trusting: NIOSSLCertificate(bytes: listenerIdentity.certificateDER, format: .der))
    tls.certificateVerification = .noHostnameVerification
    var fresh = HTTPClient.Configuration()
    fresh.tlsConfiguration = tls
    fresh.maximumUsesPerConnection = 1  // an innocent user's new connection each time, like curl
    let innocent = HTTPClient(eventLoopGroupProvider: .singleton, configuration: fresh)
    var kept = HTTPClient.Configuration()
    kept.tlsConfiguration = tls
    let writer = HTTPClient(eventLoopGroupProvider: .singleton, configuration: kept)

    let peerCatalog = try Catalog(directory: folder + "/b")
    defer { peerCatalog.close() }
    let copy = try peerCatalog.create("notes")
    let remote = RemoteEndpoint(RemoteEndpoint.Configuration(
        url: try RemoteURL(base + "/notes"), trust: .fingerprint(listenerIdentity.fingerprint),
        peerUUID: listenerIdentity.uuid, clientIdentity: peerIdentity))
    var configuration = ReplicationConfiguration(source: remote, target: LocalEndpoint(copy))
    configuration.continuous = true
    let replicator = Replicator(configuration)
    replicator.start()
    let batches = Batches(writer: writer, url: base + "/notes", target: copy)
    _ = try await batches.replicate()  // warm-up: the feed is open

    func phase() async throws -> (latencies: [(at: Double, ms: Double, status: Int)], rates: [Double], peak: (rss: Int, fds: Int)) {
        let start = now()
        async let latencies: [(at: Double, ms: Double, status: Int)] = {
            var samples: [(at: Double, ms: Double, status: Int)] = []
            while now() - start < Double(seconds) {
                let sent = now()
                var request = HTTPClientRequest(url: base + "/")
                request.method = .GET
                let status = (try? await innocent.execute(request, timeout: .seconds(30)))?.status.code ?? 0
                samples.append((sent - start, (now() - sent) * 1000, Int(status)))
                try? await Task.sleep(for: .seconds(max(0, 1 - (now() - sent))))
            }
            return samples
        }()
        var rates: [Double] = []
        var peak = (rss: 0, fds: 0)
        while now() - start < Double(seconds) {
            rates.append(try await batches.replicate())
            peak = (max(peak.rss, memory(of: server.pid, "VmRSS")), max(peak.fds, descriptors(of: server.pid)))
            try await Task.sleep(for: .seconds(1))
        }
        return (await latencies, rates, peak)
    }

    let calm = try await phase()
    let flood = TricklingFlood(port: port, connections: connections, sources: (0..<addresses).map { "127.0.0.\(2 + $0)" })
    let stormy = try await phase()
    flood.stop()
    try await Task.sleep(for: .seconds(2))
    let after = (rss: memory(of: server.pid, "VmRSS"), fds: descriptors(of: server.pid))
    await replicator.stop()
    await remote.shutdown()
    try await innocent.shutdown()
    try await writer.shutdown()

    for (name, run) in [("no flood", calm), ("flood", stormy)] {
        let settled = run.latencies.filter { name == "no flood" || $0.at >= 10 }.map(\.ms)
        let answered = run.latencies.filter { $0.status == 200 }.count
        print("\(name):")
        figure("  innocent GET / answered 200", Double(answered), "of \(run.latencies.count)")
        figure(name == "flood" ? "  GET / p50, from 10 s in (past the deadlines)" : "  GET / p50", percentile(settled, 50), "ms", decimals: 1)
        figure(name == "flood" ? "  GET / p99, from 10 s in (goal <= 100)" : "  GET / p99", percentile(settled, 99), "ms", decimals: 1)
        figure("  GET / max, whole phase", run.latencies.map(\.ms).max() ?? .nan, "ms", decimals: 1)
        figure("  paired peer's continuous replication, median", percentile(run.rates, 50), "docs/s")
        figure("  serve RSS, peak of the phase", Double(run.peak.rss) / 1024, "MB", decimals: 1)
        figure("  serve open descriptors, peak of the phase", Double(run.peak.fds), "")
    }
    figure("replication during the flood / without (goal >= 0.8)", percentile(stormy.rates, 50) / percentile(calm.rates, 50), "", decimals: 2)
    figure("strangers' connections closed or refused (each reopened)", Double(flood.closedByListener), "")
    figure("serve RSS 2 s after the flood", Double(after.rss) / 1024, "MB", decimals: 1)
    figure("serve open descriptors 2 s after the flood", Double(after.fds), "")
}

/// Batches of 1,000 small documents written on the listener, each timed until
/// the peer's continuous replication has them all.
private final class Batches: @unchecked Sendable {
    let writer: HTTPClient
    let url: String
    let target: Database
    private var next = 0

    init(writer: HTTPClient, url: String, target: Database) {
        self.writer = writer
        self.url = url
        self.target = target
    }

    /// Writes a batch and returns the documents per second until all are replicated.
    func replicate() async throws -> Double {
        let count = 1000
        let docs = (next..<next + count).map(smallDocument).joined(separator: ",")
        next += count
        var request = HTTPClientRequest(url: url + "/_bulk_docs")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Basic " + Data("bench:bench-password".utf8).base64EncodedString())
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"docs":["# + docs + "]}"))
        let start = now()
        let response = try await writer.execute(request, timeout: .seconds(60))
        _ = try await response.body.collect(upTo: 16 << 20)
        guard response.status.code == 201 else { throw BenchError("_bulk_docs answered \(response.status.code)") }
        while try target.info().docCount < next {
            guard now() - start < 120 else { throw BenchError("the replication did not catch up within 120 s") }
            try await Task.sleep(for: .milliseconds(5))
        }
        return Double(count) / (now() - start)
    }
}

/// Open descriptors of process `pid`.
func descriptors(of pid: Int32) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
}

/// Connections that never finish a TLS handshake, on a thread of their own: one
/// byte of a TLS record at once and one more every 5 s on each; one the listener
/// closes is opened again, from the same address, until ``stop()``.
private final class TricklingFlood: @unchecked Sendable {
    private let lock = NSLock()
    private var running = true
    private var closed = 0
    private let finished = DispatchSemaphore(value: 0)

    /// Connections the listener closed (each was opened again).
    var closedByListener: Int { lock.withLock { closed } }

    init(port: Int, connections: Int, sources: [String]) {
        let thread = Thread { [self] in
            run(port: port, connections: connections, sources: sources)
            finished.signal()
        }
        thread.start()
    }

    /// Stops the flood and closes its connections.
    func stop() {
        lock.withLock { running = false }
        finished.wait()
    }

    private func run(port: Int, connections: Int, sources: [String]) {
        var sockets = (0..<connections).map { Self.open(port: port, from: sources[$0 % sources.count]) }
        var trickled = now()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while lock.withLock({ running }) {
            var polled = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&polled, nfds_t(polled.count), 100)
            for (index, entry) in polled.enumerated() where entry.revents != 0 || sockets[index] < 0 {
                if sockets[index] >= 0 && recv(sockets[index], &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { continue }
                if sockets[index] >= 0 {
                    Glibc.close(sockets[index])
                    lock.withLock { closed += 1 }
                }
                sockets[index] = Self.open(port: port, from: sources[index % sources.count])
            }
            if now() - trickled >= 5 {
                trickled = now()
                for socket in sockets where socket >= 0 { _ = send(socket, [0x03], 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
        }
        for socket in sockets where socket >= 0 { Glibc.close(socket) }
    }

    /// A non-blocking connection to 127.0.0.1:`port` from `source` that has sent the first byte of a TLS handshake record.
    private static func open(port: Int, from source: String) -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return -1 }
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
        func address(_ host: String, _ port: Int) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &address.sin_addr)
            return address
        }
        var local = address(source, 0), remote = address("127.0.0.1", port)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, size) } }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, size) } }
        guard bound == 0, connected == 0 || errno == EINPROGRESS else {
            Glibc.close(socket)
            return -1
        }
        _ = send(socket, [0x16], 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        return socket
    }
}

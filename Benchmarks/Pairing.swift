import Foundation
import JSON
import Logging
import ServiceLifecycle
import Store
import SyncAgent

/// The pairing benchmarks (`syncd-bench pairing [--runs 20] [--docs 100000]`):
///
/// - the time from a node starting to join with an invitation URL until both
///   sides have recorded the pairing (the inviting side records before it
///   answers), over fresh pairs of nodes on loopback;
/// - a one-shot pull of small documents over HTTPS with mutual TLS (a paired
///   peer, no password) against the same pull over plain HTTP with a
///   password, from the same database, in alternating rounds of the same run.
func runPairingBenchmarks(arguments: [String]) async throws {
    let runs = option("runs", in: arguments, default: 20)
    let count = option("docs", in: arguments, default: 100_000)
    let folder = temporaryDirectory("pairing")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    var logger = Logger(label: "bench.pairing")
    logger.logLevel = .error

    print("pairing: \(runs) runs, two fresh nodes each, loopback")
    var times: [Double] = []
    for run in 0..<runs {
        let a = try await BenchNode.start(directory: folder + "/p\(run)a", tls: true, logger: logger)
        let b = try await BenchNode.start(directory: folder + "/p\(run)b", tls: true, logger: logger)
        _ = try a.listener.node.catalog.openOrCreate("notes")
        let (_, secret) = try a.listener.node.invitations.create(databases: ["notes"], lifetime: .seconds(600))
        let url = InvitationURL(host: "127.0.0.1", port: a.port, databases: ["notes"], uuid: a.listener.node.identity.uuid,
                                id: a.listener.node.identity.id, secret: secret)
        let client = PairingClient(identity: b.listener.node.identity, name: "b", port: b.port, peers: b.listener.node.peers)
        let start = now()
        _ = try await client.join(url)
        times.append(now() - start)
        guard try a.listener.node.peers.all().count == 1, try b.listener.node.peers.all().count == 1 else { throw BenchError("pairing not recorded") }
        await a.stop()
        await b.stop()
    }
    figure("pair URL → both sides recorded, p50 (goal <= 500)", percentile(times, 50) * 1000, "ms", decimals: 1)
    figure("max", (times.max() ?? .nan) * 1000, "ms", decimals: 1)

    print("replication over mutual TLS vs plain HTTP: \(count) documents of ~\(smallDocument(0).utf8.count) bytes")
    let source = try Catalog(directory: folder + "/source")
    let sourceDB = try source.create("notes")
    var batch: [JSON] = []
    for index in 0..<count {
        batch.append(try JSON(parsing: smallDocument(index)))
        if batch.count == 1000 || index == count - 1 {
            _ = try await sourceDB.bulkDocs(batch.map { DocumentUpload($0) }, newEdits: true)
            batch.removeAll(keepingCapacity: true)
        }
    }
    source.close()
    let users = UserStore(directory: folder + "/source", iterations: 1000)
    try users.setPassword("pw", for: "bench", roles: [UserStore.adminRole])
    let plain = try await BenchNode.start(directory: folder + "/source", tls: false, logger: logger)
    let secure = try await BenchNode.start(directory: folder + "/source", tls: true, node: plain.listener.node, logger: logger)
    let puller = try await BenchNode.start(directory: folder + "/puller", tls: true, logger: logger)
    try secure.listener.node.peers.add(PairedPeer(uuid: puller.listener.node.identity.uuid, id: puller.listener.node.identity.id, name: "puller",
                                             addresses: [], databases: ["notes"]))
    var rates: (plain: [Double], tls: [Double]) = ([], [])
    for round in 0..<4 {
        let overTLS = round % 2 == 1
        let remote = overTLS
            ? RemoteEndpoint(RemoteEndpoint.Configuration(
                url: try RemoteURL("https://127.0.0.1:\(secure.port)/notes"), trust: .fingerprint(secure.listener.node.identity.fingerprint),
                peerUUID: secure.listener.node.identity.uuid, clientIdentity: puller.listener.node.identity))
            : try RemoteEndpoint(url: "http://bench:pw@127.0.0.1:\(plain.port)/notes")
        let target = try puller.listener.node.catalog.create("copy\(round)")
        let start = now()
        let status = await Replicator(ReplicationConfiguration(source: remote, target: LocalEndpoint(target)), logger: logger).run()
        let seconds = now() - start
        await remote.shutdown()
        guard status.lastError == nil, try target.info().docCount == count else { throw BenchError("replication failed: \(status)") }
        if overTLS { rates.tls.append(Double(count) / seconds) } else { rates.plain.append(Double(count) / seconds) }
    }
    let bestPlain = rates.plain.max() ?? .nan
    let bestTLS = rates.tls.max() ?? .nan
    figure("pull over plain HTTP with a password (best of 2)", bestPlain, "docs/s")
    figure("pull over HTTPS, mutual TLS, no password (best of 2)", bestTLS, "docs/s")
    figure("mutual TLS / plain HTTP, same run (goal >= 0.8)", bestTLS / bestPlain, "", decimals: 2)
    await secure.stop()
    await plain.stop()
    await puller.stop()
}

/// A listener in this process, on loopback with a port the system picks.
private final class BenchNode: Sendable {
    let listener: Listener
    let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    private let ownsNode: Bool

    private init(listener: Listener, port: Int, group: ServiceGroup, task: Task<Void, any Error>, ownsNode: Bool) {
        self.listener = listener
        self.port = port
        self.group = group
        self.task = task
        self.ownsNode = ownsNode
    }

    static func start(directory: String, tls: Bool, node: Node? = nil, logger: Logger) async throws -> BenchNode {
        var configuration = ListenerConfiguration()
        configuration.tls = tls
        let listener = Listener(node: try node ?? Node(directory: directory, logger: logger), configuration: configuration, logger: logger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let service = try listener.service { url in
            continuation.yield(Int(url.split(separator: ":").last ?? "") ?? 0)
            continuation.finish()
        }
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: service)], logger: logger))
        let task = Task { try await group.run() }
        guard let port = await ports.first(where: { _ in true }) else { throw BenchError("the listener did not start") }
        return BenchNode(listener: listener, port: port, group: group, task: task, ownsNode: node == nil)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        if ownsNode { listener.node.close() }
    }
}

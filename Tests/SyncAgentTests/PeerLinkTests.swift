import AsyncHTTPClient
import Foundation
import Locking
import Logging
import Store
@testable import SyncAgent
import XCTest

/// The link to one paired peer, end to end in this process: B's link to A
/// reaches A through a forwarder that counts the connections it accepts.
final class PeerLinkTests: XCTestCase {
    func testAPeerStillAnsweringWhereItIsIsProbedOverItsPullsConnections() async throws {
        let databases = ["d1", "d2", "d3"]
        let (a, b, peer) = try await pairedListeners(sharing: databases)
        for name in databases { try await a.catalog.database(name).putDocuments(count: 20, prefix: name) }
        let (forwarder, elsewhere) = (try CountingForwarder(to: a.port), try CountingForwarder(to: a.port))
        defer { forwarder.stop(); elsewhere.stop() }
        let book = AddressBook()
        book.configure(uuid: peer.uuid, [forwarder.address])
        let watched = WatchedLink(peer: peer, databases: Dictionary(uniqueKeysWithValues: databases.map { ($0, nil) }),
                                  context: b.linkContext(book))
        let link = watched.link
        let running = Task { await link.run() }
        func following() -> Bool {
            let replications = link.replications
            return replications.count == 3 && replications.values.allSatisfy {
                $0.activity == .idle && $0.docsWritten == 20 && $0.checkpointedSequence == $0.throughSequence
            }
        }
        // Idle and checkpointed: a checkpoint written while A is probed would borrow a connection too.
        try await waitUntil("B has pulled and checkpointed every database and follows A's feeds", timeout: .seconds(30)) { following() }
        XCTAssertEqual(link.connection.state, .online)
        XCTAssertNil(link.connection.onlineUntil, "online now")
        XCTAssertEqual(link.connection.address, forwarder.address)

        // Another address for A appears (nothing answers there): the link probes every candidate,
        // the one in use over the pulls' client, whose connections the feeds left idle.
        let (opened, sent) = (forwarder.connections, forwarder.bytesFromClients)
        let dead = "127.0.0.1:\(try AgentTests.freePort())"
        book.configure(uuid: peer.uuid, [forwarder.address, dead])
        try await waitUntil("A is probed where the pulls reach it", timeout: .seconds(30)) { forwarder.bytesFromClients > sent }
        // Then A moves: the link takes one change of addresses after the other, so once it is
        // online at A's new address, whatever the first change made it do is done.
        book.configure(uuid: peer.uuid, [elsewhere.address])
        try await waitUntil("B follows A to its new address", timeout: .seconds(30)) { watched.arrivals.last == elsewhere.address && following() }
        XCTAssertEqual(forwarder.connections, opened, "probing A where the pulls reach it opened a connection")
        XCTAssertEqual(watched.arrivals, [forwarder.address, elsewhere.address], "the pulls were restarted where A still answered")

        running.cancel()
        await running.value
        XCTAssertEqual(link.connection.state, .offline)
        // `syncd status` says when the peer was last online: now, not when it was last written down.
        let until = try XCTUnwrap(link.connection.onlineUntil)
        XCTAssertLessThan(abs(until.timeIntervalSinceNow), 60)
        XCTAssertEqual(link.replications.values.map(\.docsWritten), [20, 20, 20])
    }

    /// A member introduced to this node learns of it about when this node learns of the member, so
    /// its first answer may be a refusal: the link waits, but the member calling this node (it knows
    /// it now) ends the wait. The wait here is an hour, so only the call brings the link back.
    func testALinkRefusedByAPeerTriesAgainAsSoonAsThatPeerCalls() async throws {
        let agent = CalledPeers()
        let a = try await startListener { $0.tls = true }
        let b = try await startListener(agent: agent) { $0.tls = true }
        let peer = try await b.join(try a.invite(["d1"]), name: "b")
        try await a.catalog.database("d1").putDocuments(count: 20, prefix: "d1")
        // A forgets B: B's pulls are refused until A knows it again.
        let bOnA = try XCTUnwrap(try a.listener.node.peers.direct().first)
        try a.listener.node.peers.remove(id: bOnA.id)
        let address = "127.0.0.1:\(a.port)"
        let watched = b.patientLink(to: peer, at: address, databases: ["d1": nil])
        let link = watched.link
        agent.links.withLock { $0[peer.id] = link }
        let running = Task { await link.run() }
        defer { running.cancel() }
        try await waitUntil("A refuses B", timeout: .seconds(30)) {
            link.connection.state == .offline && (link.connection.reason ?? "").contains("refuses this node")
        }

        // A knows B again, but has not called it: B still waits, having asked once.
        try a.listener.node.peers.add(bOnA)
        XCTAssertEqual(watched.arrivals, [address], "B asked A again before A called")
        XCTAssertTrue(agent.called.withLock { $0.isEmpty })

        // A calls B, as its own link to B would: B's listener tells the agent, and B's link tries again at once.
        let call = try PeerClient(to: b, as: a.listener.node.identity)
        let answer = try await call.client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(b.port)/"), timeout: .seconds(10))
        XCTAssertEqual(answer.status, .ok)
        await call.shutdown()
        XCTAssertEqual(agent.called.withLock { $0 }, [a.listener.node.identity.id])
        try await waitUntil("B pulled from A", timeout: .seconds(30)) {
            link.connection.state == .online && link.replications["d1"]?.docsWritten == 20
        }
        XCTAssertEqual(watched.arrivals, [address, address])
        running.cancel()
        await running.value
    }

    /// A call that came before the refusal was read (the peer heard of this node while the
    /// pulls' first requests were on their way) counts: the link asks once more at once instead
    /// of waiting, then waits. Here the call is in before the link starts, so it always precedes
    /// the refusal; a run without the call asks once.
    func testACallThatCameBeforeTheRefusalIsNotLost() async throws {
        for early in [false, true] {
            let (a, b, peer) = try await pairedListeners(sharing: ["d1"])
            // A forgets B: every pull of B's is refused as a node A does not know.
            let bOnA = try XCTUnwrap(try a.listener.node.peers.direct().first)
            try a.listener.node.peers.remove(id: bOnA.id)
            let (first, second) = (try CountingForwarder(to: a.port), try CountingForwarder(to: a.port))
            defer { first.stop(); second.stop() }
            let book = AddressBook()
            let watched = b.patientLink(to: peer, at: first.address, in: book, databases: ["d1": nil])
            let link = watched.link
            if early { link.called() }
            let running = Task { await link.run() }
            defer { running.cancel() }
            let asks = early ? 2 : 1
            try await waitUntil("A refuses B, asked \(asks) times", timeout: .seconds(30)) {
                watched.arrivals.count >= asks && link.connection.state == .offline
                    && (link.connection.reason ?? "").contains("refuses this node")
            }
            // A moves: the link asks at once where A is now, after whatever it was doing.
            book.configure(uuid: peer.uuid, [second.address])
            try await waitUntil("B asks A at its new address", timeout: .seconds(30)) { watched.arrivals.last == second.address }
            XCTAssertEqual(watched.arrivals, Array(repeating: first.address, count: asks) + [second.address],
                           early ? "the link did not ask exactly once more after the call" : "the link asked again uncalled")
            running.cancel()
            await running.value
        }
    }

    /// A peer refusing this node one database knows this node: its calls prove nothing new, so
    /// they do not end the wait (two peers refusing each other a database would otherwise wake
    /// each other at every call, reconnecting without end).
    func testAPeerRefusingOneDatabaseIsNotAskedAgainBecauseItCalls() async throws {
        let agent = CalledPeers()
        let a = try await startListener { $0.tls = true }
        let b = try await startListener(agent: agent) { $0.tls = true }
        let peer = try await b.join(try a.invite(["d1"]), name: "b")
        _ = try a.catalog.openOrCreate("d2")
        let (first, second) = (try CountingForwarder(to: a.port), try CountingForwarder(to: a.port))
        defer { first.stop(); second.stop() }
        // B pulls d2 too, which A does not share with it.
        let book = AddressBook()
        let watched = b.patientLink(to: peer, at: first.address, in: book, databases: ["d1": nil, "d2": nil])
        let link = watched.link
        agent.links.withLock { $0[peer.id] = link }
        let running = Task { await link.run() }
        defer { running.cancel() }
        func refusedD2(at address: String) -> Bool {
            let connection = link.connection
            return connection.state == .offline && (connection.reason ?? "").contains("for d2 (403: The database d2 is not shared")
                && (connection.reason ?? "").contains(address)
        }
        try await waitUntil("A refuses B d2", timeout: .seconds(30)) { refusedD2(at: first.address) }
        let connections = first.connections

        let call = try PeerClient(to: b, as: a.listener.node.identity)
        let answer = try await call.client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(b.port)/"), timeout: .seconds(10))
        XCTAssertEqual(answer.status, .ok)
        await call.shutdown()
        XCTAssertEqual(agent.called.withLock { $0 }, [a.listener.node.identity.id])
        // A moves: the link asks at once where A is now, after whatever the call made it do.
        book.configure(uuid: peer.uuid, [second.address])
        try await waitUntil("A refuses B d2 at its new address", timeout: .seconds(30)) { refusedD2(at: second.address) }
        XCTAssertEqual(watched.arrivals, [first.address, second.address], "a call ended the wait after a refusal of one database")
        XCTAssertEqual(first.connections, connections)
        running.cancel()
        await running.value
    }

    /// The agent hands a peer's call to that peer's own link, found by the UUID the peer was
    /// paired with (recorded in capitals here, as `UUID().uuidString` writes it): a link waiting
    /// 3.2–6.4 s after its fourth failure to reach the peer tries again before that wait could end.
    func testTheAgentHandsAPeersCallToThatPeersLink() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-call")
        defer { directory.remove() }
        let nothing = try AgentTests.freePort()
        let forwarder = try CountingForwarder(to: nothing)
        defer { forwarder.stop() }
        let peer = PairedPeer(uuid: UUID().uuidString, id: NodeID(certificateDER: [1]), name: "p",
                              addresses: [forwarder.address], databases: ["syncd"])
        try PeerStore(directory: directory.path).add(peer)
        try AgentTests.configuration().write(toFile: directory.path + "/syncd.toml", atomically: true, encoding: .utf8)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let agent = try Agent(directory: directory.path, configurationPath: directory.path + "/syncd.toml",
                              controlSocket: directory.path + "/control.sock", logger: logger)
        let running = Task { try await agent.run() }
        defer { running.cancel() }
        // The forwarder closes each connection (nothing listens behind it): each dial fails, and the
        // waits after the first four failures are 0.4–0.8, 0.8–1.6, 1.6–3.2 and 3.2–6.4 s.
        try await waitUntil("the link tried the peer four times", timeout: .seconds(30)) { forwarder.connections >= 4 }
        XCTAssertEqual(forwarder.connections, 4)
        agent.peerCalled(peer)
        // Within 3 s: the fourth wait lasts at least 3.2 s, so only the call can end it sooner.
        try await waitUntil("the link tried again once the peer called", timeout: .seconds(3)) { forwarder.connections >= 5 }
        running.cancel()
        _ = await running.result
    }
}

/// The agent as a test listener reaches it: only the peers' calls, handed to their links.
private final class CalledPeers: RunningAgent {
    let links = Locked<[NodeID: PeerLink]>([:])
    /// The peers that called, in order.
    let called = Locked<[NodeID]>([])

    func peerCalled(_ peer: PairedPeer) {
        called.withLock { $0.append(peer.id) }
        links.withLock { $0[peer.id] }?.called()
    }

    func status() -> AgentStatus { preconditionFailure("not served in this test") }
    func reload() async throws(ConfigurationError) {}
}

extension XCTestCase {
    /// Two TLS listeners, B paired with A, which shares `databases` with it; B's record of A.
    func pairedListeners(sharing databases: [String]) async throws -> (a: TestListener, b: TestListener, peer: PairedPeer) {
        let a = try await startListener { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        let peer = try await b.join(try a.invite(databases), name: "b")
        return (a, b, peer)
    }
}

extension TestListener {
    /// What this node's links to its peers need, with `addresses` as the address book.
    func linkContext(_ addresses: AddressBook) -> PeerLink.Context {
        var logger = Logger(label: "test.link")
        logger.logLevel = ProcessInfo.processInfo.environment["SYNCD_TEST_LOGS"] != nil ? .debug : .warning
        return PeerLink.Context(catalog: catalog, identity: listener.node.identity, addresses: addresses,
                                activeTasks: ActiveTasks(), claims: DatabaseClaims(), logger: logger)
    }

    /// This node's link to `peer`, which `book` says is at `address`, waiting an hour after each
    /// failure or refusal: within a test, only a call or a new address brings it back.
    func patientLink(to peer: PairedPeer, at address: String, in book: AddressBook = AddressBook(),
                     databases: [String: ReplicationFilter?]) -> WatchedLink {
        book.configure(uuid: peer.uuid, [address])
        var context = linkContext(book)
        context.retry = RetryPolicy(initialDelay: .seconds(3600), maximumDelay: .seconds(3600))
        return WatchedLink(peer: peer, databases: databases, context: context)
    }
}

/// A peer link, with the address it came online at each time it did: what a test reads to know
/// what the link did before a later event, rather than waiting to see that nothing happens.
final class WatchedLink: Sendable {
    let link: PeerLink
    private let online: Locked<[String]>

    init(peer: PairedPeer, databases: [String: ReplicationFilter?], context: PeerLink.Context) {
        let (watched, online) = (Locked(Watched()), Locked<[String]>([]))
        var context = context
        context.connectionChanged = {
            guard let connection = watched.withLock({ $0.link })?.connection, connection.state == .online,
                  let address = connection.address else { return }
            online.withLock { $0.append(address) }
        }
        let link = PeerLink(peer: peer, databases: databases, context: context)
        self.link = link
        self.online = online
        watched.withLock { $0.link = link }
    }

    /// Where the link came online, in order.
    var arrivals: [String] { online.withLock { $0 } }

    private struct Watched {
        weak var link: PeerLink?
    }
}

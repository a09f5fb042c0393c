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
        let forwarder = try CountingForwarder(to: a.port)
        defer { forwarder.stop() }
        let book = AddressBook()
        book.configure(uuid: peer.uuid, [forwarder.address])
        let link = PeerLink(peer: peer, databases: Dictionary(uniqueKeysWithValues: databases.map { ($0, nil) }),
                            context: b.linkContext(book))
        let running = Task { await link.run() }
        // Idle and checkpointed: a checkpoint written while A is probed would borrow a connection too.
        try await waitUntil("B has pulled and checkpointed every database and follows A's feeds", timeout: .seconds(30)) {
            let replications = link.replications
            return replications.count == 3 && replications.values.allSatisfy {
                $0.activity == .idle && $0.docsWritten == 20 && $0.checkpointedSequence == $0.throughSequence
            }
        }
        XCTAssertEqual(link.connection.state, .online)
        XCTAssertEqual(link.connection.address, forwarder.address)

        // Another address for A appears (nothing answers there): the link probes every candidate,
        // the one in use over the pulls' client, whose connections the feeds left idle.
        let opened = forwarder.connections
        let dead = "127.0.0.1:\(try AgentTests.freePort())"
        book.configure(uuid: peer.uuid, [forwarder.address, dead])
        try await Task.sleep(for: .seconds(1))
        XCTAssertEqual(forwarder.connections, opened, "probing A where the pulls reach it opened a connection")
        XCTAssertEqual(link.connection.address, forwarder.address)
        XCTAssertEqual(link.replications.values.map(\.activity), [.idle, .idle, .idle], "the pulls were restarted")

        running.cancel()
        await running.value
        XCTAssertEqual(link.connection.state, .offline)
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
        let link = b.patientLink(to: peer, at: "127.0.0.1:\(a.port)", databases: ["d1": nil])
        agent.links.withLock { $0[peer.id] = link }
        let running = Task { await link.run() }
        defer { running.cancel() }
        try await waitUntil("A refuses B", timeout: .seconds(30)) {
            link.connection.state == .offline && (link.connection.reason ?? "").contains("refuses this node")
        }

        // A knows B again, but has not called it: B still waits.
        try a.listener.node.peers.add(bOnA)
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertEqual(link.connection.state, .offline)
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
        running.cancel()
        await running.value
    }

    /// A call that came before the refusal was read (the peer heard of this node while the
    /// pulls' first requests were on their way) counts: the link asks once more at once instead
    /// of waiting, then waits. Here the call is in before the link starts, so it always precedes
    /// the refusal; the link's connections are counted against a run without the call.
    func testACallThatCameBeforeTheRefusalIsNotLost() async throws {
        var dials: [Bool: Int] = [:]
        for early in [false, true] {
            let (a, b, peer) = try await pairedListeners(sharing: ["d1"])
            // A forgets B: every pull of B's is refused as a node A does not know.
            let bOnA = try XCTUnwrap(try a.listener.node.peers.direct().first)
            try a.listener.node.peers.remove(id: bOnA.id)
            let forwarder = try CountingForwarder(to: a.port)
            defer { forwarder.stop() }
            let link = b.patientLink(to: peer, at: forwarder.address, databases: ["d1": nil])
            if early { link.called() }
            let running = Task { await link.run() }
            defer { running.cancel() }
            try await waitUntil("A refuses B", timeout: .seconds(30)) {
                link.connection.state == .offline && (link.connection.reason ?? "").contains("refuses this node")
            }
            try await Task.sleep(for: .seconds(1))
            dials[early] = forwarder.connections
            running.cancel()
            await running.value
        }
        let (without, with) = (try XCTUnwrap(dials[false]), try XCTUnwrap(dials[true]))
        XCTAssertGreaterThan(with, without, "the call before the refusal was lost")
        XCTAssertLessThanOrEqual(with, 2 * without, "the link asked more than once more")
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
        let forwarder = try CountingForwarder(to: a.port)
        defer { forwarder.stop() }
        // B pulls d2 too, which A does not share with it.
        let link = b.patientLink(to: peer, at: forwarder.address, databases: ["d1": nil, "d2": nil])
        agent.links.withLock { $0[peer.id] = link }
        let running = Task { await link.run() }
        defer { running.cancel() }
        try await waitUntil("A refuses B d2", timeout: .seconds(30)) {
            link.connection.state == .offline && (link.connection.reason ?? "").contains("for d2 (403: The database d2 is not shared")
        }
        let connections = forwarder.connections

        let call = try PeerClient(to: b, as: a.listener.node.identity)
        let answer = try await call.client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(b.port)/"), timeout: .seconds(10))
        XCTAssertEqual(answer.status, .ok)
        await call.shutdown()
        XCTAssertEqual(agent.called.withLock { $0 }, [a.listener.node.identity.id])
        try await Task.sleep(for: .seconds(1))
        XCTAssertEqual(forwarder.connections, connections, "a call ended the wait after a refusal of one database")
        XCTAssertEqual(link.connection.state, .offline)
        running.cancel()
        await running.value
    }

    /// The agent hands a peer's call to that peer's own link, found by the UUID the peer was
    /// paired with (recorded in capitals here, as `UUID().uuidString` writes it): a link waiting
    /// 3.2–6.4 s after its fourth failure to reach the peer tries again within 1.5 s.
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
        try await waitUntil("the link tried again once the peer called", timeout: .milliseconds(1500)) { forwarder.connections >= 5 }
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

    /// This node's link to `peer` at `address`, waiting an hour after each failure or refusal:
    /// within a test, only a call or a new address brings it back.
    func patientLink(to peer: PairedPeer, at address: String, databases: [String: ReplicationFilter?]) -> PeerLink {
        let book = AddressBook()
        book.configure(uuid: peer.uuid, [address])
        var context = linkContext(book)
        context.retry = RetryPolicy(initialDelay: .seconds(3600), maximumDelay: .seconds(3600))
        return PeerLink(peer: peer, databases: databases, context: context)
    }
}

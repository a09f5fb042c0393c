import Foundation
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
}

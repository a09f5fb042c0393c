import Foundation
import NIOSSL
import Store
@testable import SyncAgent
import XCTest

/// Supervising a peer's pulls, apart from choosing its address: every shared
/// database over the one connection given, databases added and removed while
/// the others keep running, and the connection shut down with the pulls.
final class PeerPullsTests: XCTestCase {
    func testEveryDatabaseIsPulledOverTheOneConnectionAndUpdatesKeepTheOthersRunning() async throws {
        let databases = ["d1", "d2", "d3", "d4"]
        let (a, b, peer) = try await pairedListeners(sharing: databases)
        for name in databases { try await a.catalog.database(name).putDocuments(count: 10, prefix: name) }
        let forwarder = try CountingForwarder(to: a.port)
        defer { forwarder.stop() }
        let certificate = try NIOSSLCertificate(bytes: a.listener.node.identity.certificateDER, format: .der)
        let connection = try PeerConnection(address: forwarder.address, certificate: certificate,
                                            identity: b.listener.node.identity, peerUUID: peer.uuid)
        let (events, report) = AsyncStream.makeStream(of: PeerPulls.Event.self)
        let pulls = PeerPulls(peer: peer, databases: ["d1": nil, "d2": nil, "d3": nil], context: b.linkContext(AddressBook()),
                              report: { report.yield($0) })
        XCTAssertTrue(pulls.replications.isEmpty, "nothing runs before a connection is given")
        pulls.start(over: connection)
        func pulled(_ names: [String]) -> Bool {
            let replications = pulls.replications
            return Set(replications.keys) == Set(names) && replications.values.allSatisfy { $0.activity == .idle && $0.docsWritten == 10 }
        }
        try await waitUntil("B follows A's three feeds", timeout: .seconds(30)) { pulled(["d1", "d2", "d3"]) }
        var iterator = events.makeAsyncIterator()
        if case .caughtUp? = await iterator.next() {} else { XCTFail("a pull catching up was not reported") }
        XCTAssertTrue(pulls.connection === connection)
        // Each feed holds a connection (HTTP/1.1); the pulls' other requests share the rest.
        XCTAssertLessThanOrEqual(forwarder.connections, 2 * 3)
        let opened = forwarder.connections
        try await connection.probe()
        XCTAssertEqual(forwarder.connections, opened, "a probe of the peer opened a connection beside the pulls' idle ones")

        // d3 is no longer shared and d4 is: d1 and d2 keep their sessions (no second catch-up).
        let before = pulls.replications
        await pulls.update(databases: ["d1": nil, "d2": nil, "d4": nil]).value
        try await waitUntil("B follows d4 instead of d3", timeout: .seconds(30)) { pulled(["d1", "d2", "d4"]) }
        XCTAssertEqual(pulls.replications["d1"]?.docsRead, before["d1"]?.docsRead)

        // Two updates whose work finishes in the other order end on the last one's databases.
        let first = pulls.update(databases: ["d1": nil])
        let second = pulls.update(databases: ["d1": nil, "d2": nil, "d4": nil])
        await second.value
        await first.value
        XCTAssertEqual(Set(pulls.databases.keys), ["d1", "d2", "d4"])
        try await waitUntil("B follows d2 and d4 again", timeout: .seconds(30)) { pulled(["d1", "d2", "d4"]) }

        await pulls.stop(quickly: false)
        XCTAssertNil(pulls.connection)
        XCTAssertEqual(pulls.replications.values.map(\.activity), [.offline, .offline, .offline])
        do {
            try await connection.probe()
            XCTFail("the connection's client was not shut down with the pulls")
        } catch {}
    }
}

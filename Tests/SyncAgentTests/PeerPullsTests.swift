import AsyncHTTPClient
import Foundation
import JSON
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
        do throws(EndpointError) {
            try await connection.probe()
            XCTFail("the connection's client was not shut down with the pulls")
        } catch {
            XCTAssertEqual(error, .unreachable(forwarder.address, ConnectionFailure.plain(HTTPClientError.alreadyShutdown)))
        }
    }

    /// A first-hand pull reads only what entered the group at the peer, over HTTPS, and writes what it
    /// takes as relayed; switched to the whole feed and back, each kind resumes from its own checkpoint.
    func testAFirstHandPullTakesOnlyWhatEnteredAtThePeerAndEachKindKeepsItsCheckpoint() async throws {
        let (a, b, peer) = try await pairedListeners(sharing: ["d1"])
        let source = try a.catalog.database("d1")
        try await source.putDocuments(count: 10, prefix: "own")
        // What a's own pulls from other members wrote.
        let relayed = (0..<5).map { n in DocumentUpload(["_id": .string("relayed\(n)"), "_rev": .string("1-\(String(repeating: "a", count: 31))\(n)"),
                                                         "_revisions": ["start": 1, "ids": .array([.string(String(repeating: "a", count: 31) + "\(n)")])]]) }
        for result in try await source.bulkDocs(relayed, newEdits: false, relayed: true) { _ = try result.result.get() }
        let certificate = try NIOSSLCertificate(bytes: a.listener.node.identity.certificateDER, format: .der)
        let connection = try PeerConnection(address: "127.0.0.1:\(a.port)", certificate: certificate,
                                            identity: b.listener.node.identity, peerUUID: peer.uuid)
        let pulls = PeerPulls(peer: peer, databases: ["d1": nil], firstHand: ["d1"], context: b.linkContext(AddressBook()), report: { _ in })
        pulls.start(over: connection)
        let target = try b.catalog.database("d1")
        func idle(written: Int) -> Bool {
            pulls.replications["d1"].map { $0.activity == .idle && $0.docsWritten == written } ?? false
        }
        try await waitUntil("B takes a's first-hand documents", timeout: .seconds(30)) { idle(written: 10) }
        XCTAssertEqual(try target.changes(ChangesOptions()).changes.count, 10)
        var firstHand = ChangesOptions()
        firstHand.firstHandOnly = true
        XCTAssertEqual(try target.changes(firstHand).changes.count, 0, "what a member's pull wrote is relayed")
        XCTAssertEqual(try target.changes(ChangesOptions()).changes.count, 10)

        await pulls.update(firstHand: []).value
        try await waitUntil("B takes a's whole feed", timeout: .seconds(30)) { idle(written: 15) }
        XCTAssertEqual(try target.changes(ChangesOptions()).changes.count, 15)
        let read = try XCTUnwrap(pulls.replications["d1"]?.docsRead)

        // Back to first-hand: it resumes where that kind left off, so nothing is read again.
        try await source.putDocuments(count: 3, prefix: "later")
        await pulls.update(firstHand: ["d1"]).value
        try await waitUntil("B takes a's new first-hand documents", timeout: .seconds(30)) { idle(written: 18) }
        XCTAssertEqual(pulls.replications["d1"]?.docsRead, read + 3)
        await pulls.stop(quickly: false)
    }

    /// A database pulled first-hand has the peer's whole feed swept once in a while: what the ring
    /// did not bring (here, what the peer relayed) arrives without the pull changing kind.
    func testASweepOfTheWholeFeedBringsWhatAFirstHandPullLeavesOut() async throws {
        let (a, b, peer) = try await pairedListeners(sharing: ["d1"])
        let source = try a.catalog.database("d1")
        try await source.putDocuments(count: 4, prefix: "own")
        let relayed = DocumentUpload(try JSON(parsing: #"{"_id":"relayed","_rev":"1-abc","_revisions":{"start":1,"ids":["abc"]}}"#))
        _ = try await source.bulkDocs([relayed], newEdits: false, relayed: true)
        let certificate = try NIOSSLCertificate(bytes: a.listener.node.identity.certificateDER, format: .der)
        let connection = try PeerConnection(address: "127.0.0.1:\(a.port)", certificate: certificate,
                                            identity: b.listener.node.identity, peerUUID: peer.uuid)
        var context = b.linkContext(AddressBook())
        context.sweepInterval = .milliseconds(300)
        let pulls = PeerPulls(peer: peer, databases: ["d1": nil], firstHand: ["d1"], context: context, report: { _ in })
        pulls.start(over: connection)
        let target = try b.catalog.database("d1")
        // A sweep's counts are added once its run ends, after its writes and checkpoint.
        try await waitUntil("a sweep brings what a relayed, and its documents are counted", timeout: .seconds(30)) {
            (try? target.changes(ChangesOptions()).changes.count) == 5 && pulls.replications["d1"]?.docsWritten == 5
        }
        XCTAssertEqual(pulls.firstHand, ["d1"])
        var firstHand = ChangesOptions()
        firstHand.firstHandOnly = true
        XCTAssertEqual(try target.changes(firstHand).changes.count, 0, "what a sweep wrote is relayed")
        await pulls.stop(quickly: false)
    }
}

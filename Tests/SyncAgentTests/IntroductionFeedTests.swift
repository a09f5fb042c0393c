import Logging
import NIOSSL
@testable import SyncAgent
import XCTest

/// Following a member's introductions (``IntroductionFeed``) over a real listener.
final class IntroductionFeedTests: XCTestCase {
    /// The member answers a long poll's head at once, so a wait as long as the client's read
    /// timeout failed the request and closed its connection; the feed then paused, deaf to
    /// changes, and reconnected (a TLS handshake a minute per pair of members in a quiet group).
    /// Now the member writes a heartbeat while it holds the request: one request spans many read
    /// timeouts, and a quiet feed sends nothing at all.
    func testAQuietFeedHoldsOneRequestOnItsOneConnectionAndHearsTheNextChangeAtOnce() async throws {
        let (a, b, member) = try await pairedListeners(sharing: ["notes"])
        let forwarder = try CountingForwarder(to: a.port)
        defer { forwarder.stop() }
        let connection = try PeerConnection(
            address: forwarder.address, certificate: try NIOSSLCertificate(bytes: a.listener.node.identity.certificateDER, format: .der),
            identity: b.listener.node.identity, peerUUID: member.uuid, readTimeout: .seconds(1))
        let feed = IntroductionFeed(member: member, connection: connection, peers: b.listener.node.peers, logger: Logger(label: "test.introductions"))
        let following = Task {
            await feed.run()
            await connection.shutdown()
        }
        defer { following.cancel() }

        // The member holds the request, writing a heartbeat every 0.8 s: six pieces from it to a
        // client that sends nothing span more than three read timeouts. A feed whose request was
        // cut asks again, and the count starts over.
        try await waitUntil("the member writes six times to a silent feed", timeout: .seconds(30)) {
            forwarder.serverPiecesSinceClientsSpoke >= 6
        }
        XCTAssertEqual(forwarder.connections, 1, "the feed's requests were cut and it connected again")

        // The held request answers the change: well before its five minutes are up.
        let c = try await startListener { $0.tls = true }
        _ = try await c.join(try a.invite(["notes"]), name: "c")
        try await waitUntil("b hears of c from a", timeout: .seconds(30)) {
            (try? b.listener.node.peers.all())?.contains { $0.id == c.listener.node.identity.id } ?? false
        }
        XCTAssertEqual(forwarder.connections, 1)
    }
}

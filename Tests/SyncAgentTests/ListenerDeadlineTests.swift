import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Store
@testable import SyncAgent
import XCTest

/// Connections that stall before their first request are closed by deadlines and
/// make room for newer ones; idle keep-alive connections are closed, feeds are not;
/// paired peers and users get through whatever strangers hold.
final class ListenerDeadlineTests: XCTestCase {
    func testConnectionsThatSendNoRequestAreClosedAfterTheDeadline() async throws {
        SyncdMetrics.bootstrap()
        let server = try await startListener { $0.limits.requestHeadTimeout = .seconds(1) }
        let silent = try RawHTTPConnection(url: server.url)
        let partial = try RawHTTPConnection(url: server.url)
        try partial.write(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8))
        let served = try RawHTTPConnection(url: server.url)
        try served.get("/_up")
        XCTAssertTrue(served.read(until: { $0.contains("200 OK") && $0.contains("}") }), served.text)

        XCTAssertTrue(silent.closed(within: .seconds(3)), "a connection that sends nothing is closed")
        XCTAssertTrue(partial.closed(within: .seconds(3)), "a request head never finished is closed")
        XCTAssertEqual(partial.text, "")
        // One that made its request in time is not cut by the deadline.
        XCTAssertFalse(served.closedByServer)
        try served.get("/_up")
        XCTAssertTrue(served.read(until: { $0.components(separatedBy: "200 OK").count == 3 }), served.text)
        for connection in [silent, partial, served] { connection.close() }
        let metrics = try await HTTP.request(.GET, server.url + "/_node/_local/_prometheus").text
        XCTAssertTrue(metrics.contains(#"syncd_listener_connections_cut_total{reason="request_head_timeout"}"#), metrics)
    }

    /// A body that stops coming gets 408 and its connection is closed; one that comes
    /// slowly but keeps coming is served, however long it takes.
    func testARequestBodyThatStallsGets408AndOneThatTricklesIsServed() async throws {
        SyncdMetrics.bootstrap()
        let server = try await startListener { $0.limits.requestBodyTimeout = .seconds(1) }
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        let admin = Data("\(TestListener.adminName):\(TestListener.adminPassword)".utf8).base64EncodedString()
        let body = Array(#"{"docs":[{"_id":"slow"}]}"#.utf8)
        let head = "POST /db/_bulk_docs HTTP/1.1\r\nHost: x\r\nAuthorization: Basic \(admin)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"

        let stalled = try RawHTTPConnection(url: server.url)
        defer { stalled.close() }
        try stalled.write(Array(head.utf8) + body.prefix(5))
        XCTAssertTrue(stalled.closed(within: .seconds(4)), "a stalled body is cut")
        XCTAssertTrue(stalled.text.hasPrefix("HTTP/1.1 408"), stalled.text)
        XCTAssertTrue(stalled.text.contains(#""error":"request_timeout""#), stalled.text)

        // A byte every 0.4 s: 2.5 timeouts' worth in all, never one without a byte.
        let trickle = try RawHTTPConnection(url: server.url)
        defer { trickle.close() }
        try trickle.write(Array(head.utf8) + body.prefix(body.count - 6))
        for byte in body.suffix(6) {
            try await Task.sleep(for: .milliseconds(400))
            try trickle.write([byte])
        }
        XCTAssertTrue(trickle.read(until: { $0.contains("}]") }), trickle.text)
        XCTAssertTrue(trickle.text.hasPrefix("HTTP/1.1 201"), trickle.text)
        let metrics = try await HTTP.request(.GET, server.url + "/_node/_local/_prometheus").text
        XCTAssertTrue(metrics.contains(#"syncd_listener_connections_cut_total{reason="request_body_timeout"}"#), metrics)
    }

    func testTLSConnectionsThatStallBeforeTheirRequestAreClosedAfterTheDeadlines() async throws {
        let server = try await startListener {
            $0.tls = true
            $0.limits.handshakeTimeout = .seconds(1)
            $0.limits.requestHeadTimeout = .seconds(1)
        }
        // One byte of a TLS record, and nothing more.
        let trickle = try RawHTTPConnection(url: server.url)
        try trickle.write([0x16])
        // A handshake done, and no request.
        let quiet = try await Self.handshake(port: server.port)

        XCTAssertTrue(trickle.closed(within: .seconds(3)), "a handshake never finished is closed")
        try await assertTrue(await Self.closes(quiet, within: .seconds(4)), "a request never sent after the handshake is closed")
        trickle.close()
    }

    func testStrangersHoldingEverySlotLockOutNeitherPeersNorUsers() async throws {
        let a = try await startListener {
            $0.tls = true
            $0.limits.maximumPendingConnections = 20
            $0.limits.maximumConnections = 2
            // Far beyond the test: only the pending budget's rule makes room.
            $0.limits.handshakeTimeout = .seconds(120)
            $0.limits.requestHeadTimeout = .seconds(120)
        }
        let b = try await startListener { $0.tls = true }
        _ = try await b.join(try a.invite(["notes"]))
        try await a.catalog.database("notes").putDocuments(count: 30, prefix: "a")

        // Strangers from three addresses fill the pending budget with handshakes never finished.
        var flood: [RawHTTPConnection] = []
        for index in 0..<30 {
            let connection = try RawHTTPConnection(url: a.url, source: "127.0.0.\(2 + index % 3)")
            try connection.write([0x16])
            flood.append(connection)
        }
        try await waitUntil("the pending budget full") { a.listener.pendingConnections.count == 20 }

        // Users get in, each displacing the oldest stranger, and then fill the slots of clients that are not peers.
        let first = try PeerClient(to: a), second = try PeerClient(to: a), third = try PeerClient(to: a)
        addTeardownBlock { for client in [first, second, third] { await client.shutdown() } }
        try await assertEqual(try await HTTP.json(.GET, a.url + "/", client: first.client).status, 200)
        try await assertEqual(try await HTTP.json(.GET, a.url + "/", client: second.client).status, 200)
        try await assertEqual(try await HTTP.json(.GET, a.url + "/", client: third.client).status, 503)
        XCTAssertTrue(flood[0].closed(within: .seconds(5)), "the oldest stranger made room")

        // The paired peer replicates all the same.
        let notesB = try b.catalog.openOrCreate("notes")
        let fromA = try b.peerEndpoint(a, "notes")
        let pulled = await Replicator(ReplicationConfiguration(source: fromA, target: LocalEndpoint(notesB))).run()
        await fromA.shutdown()
        XCTAssertNil(pulled.lastError)
        XCTAssertEqual(pulled.docsWritten, 30)
        for connection in flood { connection.close() }
    }

    func testStrangersKeepingAnonymousConnectionsOpenMakeRoomForUsers() async throws {
        SyncdMetrics.bootstrap()
        let server = try await startListener {
            $0.limits.maximumConnections = 4
            $0.limits.maximumConnectionsPerClient = 3
        }
        func stranger(from source: String) throws -> RawHTTPConnection { try Self.stranger(server, from: source) }
        // Three strangers from one address and one from another hold every slot.
        let crowd = try (0..<3).map { _ in try stranger(from: "127.0.0.2") }
        let lone = try stranger(from: "127.0.0.3")

        // A user gets in: the oldest stranger from the most crowded address makes room.
        let user = try RawHTTPConnection(url: server.url, source: "127.0.0.4")
        try user.get("/_up")
        XCTAssertTrue(user.read(until: { $0.contains("200 OK") && $0.contains("}") }), user.text)
        XCTAssertTrue(crowd[0].closed(within: .seconds(3)), "the oldest stranger of the crowd made room")
        XCTAssertFalse(lone.closedByServer)

        // Another stranger from the crowd's address displaces the crowd's oldest, never the user.
        let fourth = try stranger(from: "127.0.0.2")
        XCTAssertTrue(crowd[1].closed(within: .seconds(3)), "the address's oldest stranger made room")
        try user.get("/_up")
        XCTAssertTrue(user.read(until: { $0.components(separatedBy: "200 OK").count == 3 }), user.text)
        XCTAssertFalse(user.closedByServer, "a user's connection is never displaced")
        XCTAssertEqual(server.listener.connectionSlots.count, 4)

        let metrics = try await HTTP.request(.GET, server.url + "/_node/_local/_prometheus").text
        let displaced = metrics.split(separator: "\n").first { $0.hasPrefix(#"syncd_listener_connections_cut_total{reason="stranger_displaced"}"#) }
        XCTAssertGreaterThanOrEqual(displaced?.split(separator: " ").last.flatMap { Int($0) } ?? 0, 2, metrics)
        for connection in crowd + [lone, fourth, user] { connection.close() }
    }

    func testAUsersConnectionIsNeverTheOneDisplacedHoweverOld() async throws {
        let server = try await startListener { $0.limits.maximumConnections = 2 }
        // The user first, from an address of its own; then a stranger: the budget is full.
        let user = try RawHTTPConnection(url: server.url, source: "127.0.0.4")
        try user.get("/_up")
        XCTAssertTrue(user.read(until: { $0.contains("200 OK") && $0.contains("}") }), user.text)
        let first = try Self.stranger(server, from: "127.0.0.2")
        // One more: the stranger's connection goes, not the older one of the user.
        let second = try Self.stranger(server, from: "127.0.0.3")
        XCTAssertTrue(first.closed(within: .seconds(3)), "the stranger made room")
        try user.get("/_up")
        XCTAssertTrue(user.read(until: { $0.components(separatedBy: "200 OK").count == 3 }), user.text)
        XCTAssertFalse(user.closedByServer)
        for connection in [user, first, second] { connection.close() }
    }

    /// An anonymous request answered on a connection kept open.
    private static func stranger(_ server: TestListener, from source: String) throws -> RawHTTPConnection {
        let connection = try RawHTTPConnection(url: server.anonymousURL, source: source)
        try connection.get("/_up")
        XCTAssertTrue(connection.read(until: { $0.contains("\r\n\r\n") && $0.contains("}") }), connection.text)
        XCTAssertFalse(connection.closedByServer)
        return connection
    }

    func testQuietFeedsOutliveTheIdleTimeoutThatClosesIdleConnections() async throws {
        let server = try await startListener { $0.limits.idleTimeout = .seconds(1) }
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        let continuous = try RawHTTPConnection(url: server.url)
        try continuous.get("/db/_changes?feed=continuous&since=now&timeout=30000")
        XCTAssertTrue(continuous.read(until: { $0.contains("200 OK") }), continuous.text)
        let longpoll = try RawHTTPConnection(url: server.url)
        try longpoll.get("/db/_changes?feed=longpoll&since=now&timeout=30000")
        XCTAssertTrue(longpoll.read(until: { $0.contains("200 OK") }), longpoll.text)

        // A keep-alive connection with no request in flight is closed after the idle timeout…
        let idle = try RawHTTPConnection(url: server.url)
        try idle.get("/_up")
        XCTAssertTrue(idle.read(until: { $0.contains("200 OK") && $0.contains("}") }), idle.text)
        XCTAssertTrue(idle.closed(within: .seconds(4)), "an idle keep-alive connection is closed")

        // …and the feeds, quiet as long, are still open and deliver the next change.
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db/late", ["n": 1]).status, 201)
        XCTAssertTrue(continuous.read(until: { $0.contains(#""id":"late""#) }), continuous.text)
        XCTAssertTrue(longpoll.read(until: { $0.contains(#""id":"late""#) }), longpoll.text)
        XCTAssertFalse(continuous.closedByServer)
        continuous.close()
        longpoll.close()
        idle.close()
    }

    /// Opens a TLS connection to the loopback `port`, finishes the handshake, and sends nothing.
    private static func handshake(port: Int) async throws -> any Channel {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        let context = try NIOSSLContext(configuration: configuration)
        let group = MultiThreadedEventLoopGroup.singleton
        let done = group.any().makePromise(of: Void.self)
        let channel = try await ClientBootstrap(group: group).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
                try channel.pipeline.syncOperations.addHandler(HandshakeWatch(done: done))
            }
        }.connect(host: "127.0.0.1", port: port).get()
        try await done.futureResult.get()
        return channel
    }

    /// Whether `channel` is closed by the other side within `timeout`.
    private static func closes(_ channel: any Channel, within timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await channel.closeFuture.get()) != nil || !channel.isActive }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            channel.close(promise: nil)
            return first
        }
    }
}

/// Completes `done` when the TLS handshake is done.
private final class HandshakeWatch: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let done: EventLoopPromise<Void>

    init(done: EventLoopPromise<Void>) {
        self.done = done
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent { done.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        done.fail(error)
        context.fireErrorCaught(error)
    }
}

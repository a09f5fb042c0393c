import Foundation
import NIOSSL
@testable import SyncAgent
import XCTest

/// Choosing where to reach a peer, apart from pulling from it: among the address
/// book's candidates, the one where the peer answers wins, over a client whose
/// first connection the pulls then use.
final class PeerDialerTests: XCTestCase {
    func testTheAddressWhereThePeerAnswersWinsAndTheOthersSayWhyNot() async throws {
        let (a, b, peer) = try await pairedListeners(sharing: ["notes"])
        let impostor = try await startListener { $0.tls = true }
        let dead = "127.0.0.1:\(try AgentTests.freePort())"
        let book = AddressBook()
        book.configure(uuid: peer.uuid, [dead, "127.0.0.1:\(impostor.port)", "127.0.0.1:\(a.port)"])
        let dialer = PeerDialer(peer: peer, identity: b.listener.node.identity, addresses: book)
        XCTAssertEqual(dialer.candidates, [dead, "127.0.0.1:\(impostor.port)", "127.0.0.1:\(a.port)"])

        // The first time, the certificate is read from whichever address shows it.
        guard case .reached(let connection) = await dialer.dial(dialer.candidates) else { return XCTFail("A was not reached") }
        XCTAssertEqual(connection.address, "127.0.0.1:\(a.port)")
        await connection.shutdown()

        // With the certificate known, each address is asked `GET /` over a pinned client.
        guard case .failed(let why) = await dialer.dial([dead, "127.0.0.1:\(impostor.port)"]) else { return XCTFail("the impostor passed") }
        let reasons = why.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.sorted()
        XCTAssertEqual(reasons, ["connection refused at \(dead)",
                                 "the server's certificate is not trusted at 127.0.0.1:\(impostor.port)"].sorted(), why)
    }

    func testDialingAgainWhereThePeerIsReachedReusesItsConnection() async throws {
        let (a, b, peer) = try await pairedListeners(sharing: ["notes"])
        let forwarder = try CountingForwarder(to: a.port)
        defer { forwarder.stop() }
        let book = AddressBook()
        book.configure(uuid: peer.uuid, [forwarder.address])
        let dialer = PeerDialer(peer: peer, identity: b.listener.node.identity, addresses: book)
        guard case .reached(let connection) = await dialer.dial(dialer.candidates) else { return XCTFail("A was not reached") }
        defer { Task { await connection.shutdown() } }
        XCTAssertEqual(forwarder.connections, 2, "the handshake reading A's certificate, then the probe's connection")

        guard case .reached(let again) = await dialer.dial(dialer.candidates, current: connection) else { return XCTFail("A was lost") }
        XCTAssertTrue(again === connection)
        let notes = try connection.endpoint("notes", maximumDocumentSize: 8_000_000, logger: b.listener.logger)
        _ = try await notes.identity()
        try await notes.prepare(createIfMissing: false)
        XCTAssertEqual(forwarder.connections, 2, "probing again and a database's requests use the probe's connection")
    }
}

import AsyncHTTPClient
import Foundation
import Store
@testable import SyncAgent
import XCTest

/// Pairing two nodes with an invitation, and what pairing does and does not let a node do.
final class PairingTests: XCTestCase {
    func testPairingRecordsBothSidesAndPeersReplicateByCertificateAlone() async throws {
        let a = try await startListener { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        let invitation = try a.invite(["notes"])
        let peer = try await b.join(invitation, name: "laptop")

        XCTAssertEqual(peer.uuid, a.listener.node.identity.uuid)
        XCTAssertEqual(peer.id, a.listener.node.identity.id)
        XCTAssertEqual(peer.databases, ["notes"])
        XCTAssertEqual(peer.addresses, ["127.0.0.1:\(a.port)"])
        let recordedOnA = try a.listener.node.peers.all()
        XCTAssertEqual(recordedOnA.count, 1)
        XCTAssertEqual(recordedOnA.first?.uuid, b.listener.node.identity.uuid)
        XCTAssertEqual(recordedOnA.first?.id, b.listener.node.identity.id)
        XCTAssertEqual(recordedOnA.first?.name, "laptop")
        XCTAssertEqual(recordedOnA.first?.addresses, ["127.0.0.1:\(b.port)"])
        XCTAssertEqual(try b.listener.node.peers.all().map(\.uuid), [a.listener.node.identity.uuid])

        // Pull A → B and push B → A, with certificates and no password.
        let notesA = try a.catalog.database("notes")
        try await notesA.putDocuments(count: 40, prefix: "a")
        let notesB = try b.catalog.openOrCreate("notes")
        let fromA = try b.peerEndpoint(a, "notes")
        let pulled = await Replicator(ReplicationConfiguration(source: fromA, target: LocalEndpoint(notesB))).run()
        XCTAssertNil(pulled.lastError)
        XCTAssertEqual(pulled.docsWritten, 40)
        try await notesB.putDocuments(count: 7, prefix: "b")
        let pushed = await Replicator(ReplicationConfiguration(source: LocalEndpoint(notesB), target: fromA)).run()
        await fromA.shutdown()
        XCTAssertNil(pushed.lastError)
        XCTAssertEqual(pushed.docsWritten, 7)
        XCTAssertEqual(try notesA.info().docCount, 47)

        // The invitation was spent.
        do {
            _ = try await b.join(invitation)
            XCTFail("an invitation works once")
        } catch {
            XCTAssertEqual(error, .invitationRefused("the invitation was already used"))
        }
    }

    /// Two joiners with one name are told apart: the second is recorded as `laptop-2`, and told so.
    func testAJoinerWhoseNameIsTakenIsRecordedWithASuffixAndToldSo() async throws {
        let a = try await startListener { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        let c = try await startListener { $0.tls = true }
        let first = try await b.join(try a.invite(["notes"]), name: "laptop")
        XCTAssertNil(first.knownAs)
        let second = try await c.join(try a.invite(["notes"]), name: "laptop")
        XCTAssertEqual(second.knownAs, "laptop-2")
        XCTAssertNil(second.calledItself)

        let onA = try a.listener.node.peers.all().sorted { $0.name < $1.name }
        XCTAssertEqual(onA.map(\.name), ["laptop", "laptop-2"])
        XCTAssertEqual(onA.map(\.id), [b.listener.node.identity.id, c.listener.node.identity.id])
        XCTAssertEqual(onA.map(\.calledItself), [nil, "laptop"])
        XCTAssertEqual(try a.listener.node.peers.find("laptop").map(\.id), [b.listener.node.identity.id], "one peer per name")

        // Paired again, C keeps its name here; a third gets the next one.
        let again = try await c.join(try a.invite(["notes"]), name: "laptop")
        XCTAssertEqual(again.knownAs, "laptop-2")
        let d = try await startListener { $0.tls = true }
        try await assertEqual(try await d.join(try a.invite(["notes"]), name: "laptop").knownAs, "laptop-3")
        XCTAssertEqual(Set(try a.listener.node.peers.all().map(\.name)), ["laptop", "laptop-2", "laptop-3"])
    }

    func testWrongExpiredCancelledAndGuessedSecretsAreRefusedAndRecordNothing() async throws {
        let clock = ManualClock()  // A's time, for its invitations
        let a = try await startListener(clock: clock) { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        func refusal(_ invitation: InvitationURL) async -> PairingError? {
            do {
                _ = try await b.join(invitation)
                return nil
            } catch {
                return error
            }
        }
        var wrong = try a.invite()
        wrong.secret = "aaaaaaaaaaaaaaaaaaaaaaaaaa"
        let wrongRefusal = await refusal(wrong)
        XCTAssertEqual(wrongRefusal, .invitationRefused("no such invitation: the secret is wrong"))
        XCTAssertEqual(wrongRefusal?.description, "pairing refused: no such invitation: the secret is wrong")

        let expiring = try a.invite(lifetime: .seconds(60))
        clock.advance(by: 59)
        XCTAssertEqual(try a.listener.node.invitations.all().last?.isOpen(at: clock.now), true, "open until its lifetime is over")
        clock.advance(by: 1)
        let expiredRefusal = await refusal(expiring)
        XCTAssertEqual(expiredRefusal, .invitationRefused("the invitation expired"))

        let cancelled = try a.invite()
        XCTAssertEqual(try a.listener.node.invitations.cancel(), 2, "the one whose secret was mistyped, and this one")
        let cancelledRefusal = await refusal(cancelled)
        XCTAssertEqual(cancelledRefusal, .invitationRefused("the invitation was cancelled"))
        XCTAssertEqual(try a.listener.node.peers.all(), [])
        XCTAssertEqual(try b.listener.node.peers.all(), [])

        // Guessing is slowed down: 5 failures per address (3 so far), then 429 without a check.
        var guess = try a.invite()
        let good = guess
        guess.secret = "bbbbbbbbbbbbbbbbbbbbbbbbbb"
        for _ in 0..<2 {
            let refused = await refusal(guess)
            XCTAssertEqual(refused, .invitationRefused("no such invitation: the secret is wrong"))
        }
        let limited = await refusal(guess)
        guard case .rateLimited(let reason)? = limited else { return XCTFail("expected a rate limit, got \(String(describing: limited))") }
        let wait = reason.wholeMatch(of: /Too many failed pairing attempts from this address; retry in ([0-9]+) s\./)?.1
        XCTAssertNotNil(wait.flatMap { Int($0) }.map { $0 > 0 }, reason)
        let goodButLimited = await refusal(good)
        guard case .rateLimited? = goodButLimited else { return XCTFail("the limit holds for every secret") }
        XCTAssertEqual(try a.listener.node.invitations.all().filter { $0.isOpen(at: clock.now) }.count, 1, "a limited attempt spends nothing")
    }

    func testAURLWithAnotherNodesIDOrUUIDIsRefusedBeforeTheSecretIsSent() async throws {
        let a = try await startListener { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        let impostor = try await startListener { $0.tls = true }
        var invitation = try a.invite()
        invitation.id = impostor.listener.node.identity.id
        do {
            _ = try await b.join(invitation)
            XCTFail("a server without the URL's ID must be refused")
        } catch {
            guard case .wrongNode(let why) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(why, "the server at 127.0.0.1:\(a.port) is not node \(impostor.listener.node.identity.id.short): its certificate has another ID")
        }
        var otherUUID = try a.invite()
        otherUUID.uuid = impostor.listener.node.identity.uuid
        do {
            _ = try await b.join(otherUUID)
            XCTFail("a certificate naming another UUID must be refused")
        } catch {
            XCTAssertEqual(error, .wrongNode("the server's certificate does not name the node UUID the URL carries"))
        }
        // Nothing reached A: both invitations are still open and no attempt was counted.
        XCTAssertEqual(try a.listener.node.invitations.all().filter { $0.isOpen() }.count, 2)
        XCTAssertNil(a.listener.pairingAttempts.wait(for: "127.0.0.1"))
        XCTAssertEqual(try a.listener.node.peers.all(), [])
    }

    func testUnpairedAndRevokedNodesAreRefusedAndRevocationClosesTheirConnections() async throws {
        let a = try await startListener { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        let stranger = try await startListener { $0.tls = true }
        _ = try await b.join(try a.invite(["notes"]))

        let asStranger = try PeerClient(to: a, as: stranger.listener.node.identity)
        let refused = try await HTTP.json(.GET, a.anonymousURL + "/notes", client: asStranger.client)
        await asStranger.shutdown()
        XCTAssertEqual(refused.status, 403)
        XCTAssertEqual(refused.json["error"], "not_paired")
        XCTAssertEqual(refused.json["reason"]?.stringValue, "Node \(stranger.listener.node.identity.id.short) is not paired with this node.")

        let asB = try PeerClient(to: a, as: b.listener.node.identity)
        try await assertEqual(try await HTTP.json(.GET, a.anonymousURL + "/notes", client: asB.client).status, 200)
        // A continuous feed held open by B ends when B is revoked.
        var request = HTTPClientRequest(url: a.anonymousURL + "/notes/_changes?feed=continuous&heartbeat=500")
        request.method = .GET
        let feed = try await asB.client.execute(request, timeout: .seconds(60))
        XCTAssertEqual(feed.status.code, 200)
        XCTAssertTrue(try a.listener.node.peers.remove(id: b.listener.node.identity.id))
        let started = ContinuousClock.now
        do {
            for try await _ in feed.body {}
        } catch {}
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(20), "the revoked peer's feed must be closed")
        let revoked = try await HTTP.json(.GET, a.anonymousURL + "/notes", client: asB.client)
        await asB.shutdown()
        XCTAssertEqual(revoked.status, 403)
        XCTAssertEqual(revoked.json["error"], "not_paired")
        XCTAssertEqual(revoked.json["reason"]?.stringValue, "Node \(b.listener.node.identity.id.short) is not paired with this node.")
    }

    /// A certificate names whatever UUID its maker chose: a node claiming the
    /// UUID of a paired peer with another key is refused, and the peer stays.
    func testAUUIDPairedOnceIsNotTakenOverByAnotherCertificate() async throws {
        let a = try await startListener { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        _ = try await b.join(try a.invite(["private"]))
        let impostorDirectory = try TemporaryDirectory()
        defer { impostorDirectory.remove() }
        try (b.listener.node.identity.uuid + "\n").write(toFile: impostorDirectory.path + "/node-uuid", atomically: true, encoding: .utf8)
        let impostor = try await startListener(directory: impostorDirectory.path) { $0.tls = true }
        XCTAssertEqual(impostor.listener.node.identity.uuid, b.listener.node.identity.uuid)
        XCTAssertNotEqual(impostor.listener.node.identity.id, b.listener.node.identity.id)
        let invitation = try a.invite(["public"])
        do {
            _ = try await impostor.join(invitation)
            XCTFail("a paired UUID must not be claimed by another certificate")
        } catch {
            XCTAssertEqual(error, .invitationRefused("node UUID \(b.listener.node.identity.uuid) is already paired with another ID"))
        }
        let peers = try a.listener.node.peers.all()
        XCTAssertEqual(peers.map(\.id), [b.listener.node.identity.id])
        XCTAssertEqual(peers.first?.databases, ["private"])
    }

    /// A pairing that cannot be recorded (here `peers.json` cannot be written) pairs nothing
    /// and leaves the invitation open: the same URL pairs once the fault is gone.
    func testAPairingThatCannotBeRecordedLeavesTheInvitationOpen() async throws {
        let a = try await startListener { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        let invitation = try a.invite(["notes"])
        let peersFile = a.directory + "/peers.json"
        try? FileManager.default.removeItem(atPath: peersFile)
        try FileManager.default.createDirectory(atPath: peersFile, withIntermediateDirectories: false)
        do {
            _ = try await b.join(invitation)
            XCTFail("a pairing that cannot be recorded must fail")
        } catch {
            XCTAssertTrue(error.description.hasPrefix("the inviting node answered 500"), error.description)
        }
        XCTAssertEqual(try b.listener.node.peers.all().count, 0)
        XCTAssertEqual(try a.listener.node.invitations.all().filter { $0.isOpen() }.count, 1)

        try FileManager.default.removeItem(atPath: peersFile)
        let peer = try await b.join(invitation)
        XCTAssertEqual(peer.uuid, a.listener.node.identity.uuid)
        XCTAssertEqual(try a.listener.node.peers.all().map(\.uuid), [b.listener.node.identity.uuid])
    }

    func testNodeIDsAndInvitationURLsRoundTrip() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let identity = try NodeIdentity.loadOrCreate(in: directory.path)
        let id = identity.id
        XCTAssertEqual(id.description.count, 64)
        XCTAssertEqual(id.description.split(separator: "-").count, 13)
        XCTAssertEqual(NodeID(id.description), id)
        XCTAssertEqual(NodeID(id.description.lowercased().replacingOccurrences(of: "-", with: "")), id)
        XCTAssertEqual(NodeID(identity.fingerprint), id)
        XCTAssertNil(NodeID("not-an-id"))
        XCTAssertEqual(NodeIdentity.uuid(inCertificateDER: identity.certificateDER), identity.uuid)

        let url = InvitationURL(host: "192.168.1.20", port: 5984, databases: ["my notes"], id: id, secret: "abc234")
        XCTAssertEqual(try InvitationURL(url.description), url)
        XCTAssertEqual(try InvitationURL(url.codeText), url)
        XCTAssertEqual(url.description, "https://192.168.1.20:5984/my%20notes#\(id.compact)-ABC234")
        XCTAssertEqual(url.codeText, "HTTPS://192.168.1.20:5984/my%20notes#\(id.compact)-ABC234")
        XCTAssertEqual(try InvitationURL(InvitationURL(host: "fd00::1", port: 1, databases: ["d", "e,f"], id: id, secret: "s").description).databases, ["d", "e,f"])
        // The default database goes unnamed.
        let plain = InvitationURL(host: "10.0.0.2", port: 6984, databases: ["syncd"], id: id, secret: "qbuq")
        XCTAssertEqual(plain.description, "https://10.0.0.2:6984/#\(id.compact)-QBUQ")
        XCTAssertEqual(try InvitationURL(plain.description).databases, ["syncd"])
        // The earlier, longer form is still read, with the UUID it carries.
        let earlier = try InvitationURL("https://192.168.1.20:5984/notes#uuid=\(identity.uuid)&id=\(id.compact)&dbs=notes,photos&secret=abc234")
        XCTAssertEqual(earlier, InvitationURL(host: "192.168.1.20", port: 5984, databases: ["notes", "photos"], uuid: identity.uuid, id: id, secret: "abc234"))
        for (text, reason) in [
            ("https://192.168.1.20:5984/#\(id.compact)", "the URL carries no node ID and secret (is it a syncd pairing URL?)"),
            ("https://192.168.1.20:5984/#NOTANID-ABC", "the URL carries no valid node ID"),
            ("http://192.168.1.20:5984/notes", "not an https URL with a host and port"),
            ("https://192.168.1.20:5984/notes#uuid=\(identity.uuid)&secret=x", "the URL carries no valid node ID"),
        ] {
            XCTAssertThrowsError(try InvitationURL(text), text) { XCTAssertEqual($0 as? PairingError, .invalidURL(reason), text) }
        }
    }
}

import AsyncHTTPClient
import Foundation
import JSON
@testable import SyncAgent
import XCTest

/// `GET /_introductions` on real listeners over mutual TLS: what a member hears of the
/// others, at once when it changes, and what an introduced member may then do.
final class IntroductionsRouteTests: XCTestCase {
    /// The names and databases in an answer, by name.
    private func introduced(_ answer: HTTPAnswer) -> [String: [String]] {
        let list = Introduction.parse(answer: answer.json)?.introductions ?? []
        return Dictionary(uniqueKeysWithValues: list.map { ($0.name, $0.databases) })
    }

    func testAMemberHearsOfTheOthersAndOfEachChangeAtOnce() async throws {
        let a = try await startListener { $0.tls = true }
        let (b, c, d, e) = try await (startListener { $0.tls = true }, startListener { $0.tls = true },
                                      startListener { $0.tls = true }, startListener { $0.tls = true })
        _ = try await b.join(try a.invite(["notes"]), name: "b")
        _ = try await c.join(try a.invite(["notes", "photos"]), name: "c")
        let asB = try PeerClient(to: a, as: b.listener.node.identity)
        let asE = try PeerClient(to: a, as: e.listener.node.identity)
        defer { Task { await asB.shutdown(); await asE.shutdown() } }
        let url = a.anonymousURL + "/_introductions"

        // b shares only notes with a: it hears of c for notes, and not of itself.
        let first = try await HTTP.request(.GET, url, client: asB.client)
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(introduced(first), ["c": ["notes"]])
        let tag = try XCTUnwrap(first.json["tag"]?.stringValue)

        // Held until the list changes: d pairing answers it, long before the 30 s wait ends
        // (the request gives up after 10 s, which would fail the test).
        async let held = HTTP.request(.GET, url + "?since=\(tag)&timeout=30000", client: asB.client, timeout: .seconds(10))
        try await Task.sleep(for: .milliseconds(300))
        _ = try await d.join(try a.invite(["notes"]), name: "d")
        let second = try await held
        XCTAssertEqual(introduced(second), ["c": ["notes"], "d": ["notes"]])

        // A removal answers at once too.
        let secondTag = try XCTUnwrap(second.json["tag"]?.stringValue)
        async let removal = HTTP.request(.GET, url + "?since=\(secondTag)&timeout=30000", client: asB.client, timeout: .seconds(10))
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertTrue(try a.listener.node.peers.remove(id: c.listener.node.identity.id))
        let removed = try await removal
        XCTAssertEqual(introduced(removed), ["d": ["notes"]])

        // Unchanged, the wait ends with the same list.
        let unchanged = try await HTTP.request(.GET, url + "?since=\(try XCTUnwrap(second.json["tag"]?.stringValue))&timeout=0",
                                               client: asB.client)
        XCTAssertEqual(introduced(unchanged), ["d": ["notes"]])

        // A private pair hears of nobody, and nobody hears of it.
        _ = try await PairingClient(identity: e.listener.node.identity, name: "e", port: e.port, peers: e.listener.node.peers,
                                    introduce: false).join(try a.invite(["notes"]))
        XCTAssertEqual(try a.listener.node.peers.all().first { $0.name == "e" }?.introduce, false)
        XCTAssertEqual(try e.listener.node.peers.all().first?.introduce, false, "the joining node keeps the pair private too")
        let toE = try await HTTP.request(.GET, url, client: asE.client)
        XCTAssertEqual(introduced(toE), [:])
        let toB = try await HTTP.request(.GET, url, client: asB.client)
        XCTAssertEqual(introduced(toB), ["d": ["notes"]])
    }

    /// With `heartbeat`, a held answer writes a newline while it waits (so a member may hold it
    /// past its client's read timeout); the list follows the newlines. Without, it waits silent.
    func testAHeldAnswerWritesHeartbeatsWhileItWaitsWhenAsked() async throws {
        let a = try await startListener { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        _ = try await b.join(try a.invite(["notes"]), name: "b")
        let asB = try PeerClient(to: a, as: b.listener.node.identity)
        defer { Task { await asB.shutdown() } }
        let url = a.anonymousURL + "/_introductions"
        let first = try await HTTP.request(.GET, url, client: asB.client)
        let tag = try XCTUnwrap(first.json["tag"]?.stringValue)

        let held = try await HTTP.request(.GET, url + "?since=\(tag)&timeout=1500&heartbeat=200", client: asB.client,
                                          timeout: .seconds(10))
        XCTAssertEqual(held.status, 200)
        let beats = held.body.prefix { $0 == 0x0A }.count
        XCTAssertTrue((5...8).contains(beats), "\(beats) heartbeats in 1.5 s, one each 200 ms expected: \(held.text)")
        XCTAssertEqual(held.json["tag"]?.stringValue, tag, held.text)

        let silent = try await HTTP.request(.GET, url + "?since=\(tag)&timeout=500", client: asB.client, timeout: .seconds(10))
        XCTAssertEqual(silent.body.first, UInt8(ascii: "{"), silent.text)
        XCTAssertEqual(silent.json["tag"]?.stringValue, tag)
    }

    func testOnlyMembersReadIntroductions() async throws {
        let a = try await startListener(users: ["alice": "alice-pw"]) { $0.tls = true }
        let stranger = try await startListener { $0.tls = true }
        let plain = try PeerClient(to: a)
        let asStranger = try PeerClient(to: a, as: stranger.listener.node.identity)
        defer { Task { await plain.shutdown(); await asStranger.shutdown() } }
        let url = a.anonymousURL + "/_introductions"
        let anonymous = try await HTTP.request(.GET, url, client: plain.client)
        XCTAssertEqual(anonymous.status, 401)
        try await assertEqual(await HTTP.request(.GET, url, client: asStranger.client).status, 403)
        let user = try await HTTP.request(.GET, url, headers: [HTTP.basic("alice", "alice-pw")], client: plain.client)
        XCTAssertEqual(user.status, 403)
        XCTAssertEqual(user.json["error"], "forbidden")
        try await assertEqual(await HTTP.request(.POST, url, json: [:], headers: [HTTP.basic("alice", "alice-pw")],
                                                 client: plain.client).status, 405)
    }

    /// c, introduced to b by a, reads b's shared database with its certificate and nothing
    /// else; once a stops introducing it, b refuses it and closes its connections.
    func testAnIntroducedMemberIsTrustedForItsDatabasesUntilItsIntroducerLetsItGo() async throws {
        let a = try await startListener { $0.tls = true }
        let (b, c) = try await (startListener { $0.tls = true }, startListener { $0.tls = true })
        _ = try await b.join(try a.invite(["notes"]), name: "b")
        _ = try await c.join(try a.invite(["notes"]), name: "c")
        _ = try b.catalog.openOrCreate("notes")
        _ = try b.catalog.openOrCreate("photos")
        let asC = try PeerClient(to: b, as: c.listener.node.identity)
        defer { Task { await asC.shutdown() } }
        try await assertEqual(await HTTP.request(.GET, b.anonymousURL + "/notes", client: asC.client).status, 403, "not introduced yet")

        // What b's agent does with a's answer: keep it.
        let aID = a.listener.node.identity.id
        let list = a.listener.node.peers.introductions(for: try XCTUnwrap(a.listener.node.peers.all().first { $0.name == "b" }))
        b.listener.node.peers.record(list, from: aID)
        let member = try XCTUnwrap(b.listener.node.peers.peer(id: c.listener.node.identity.id))
        XCTAssertEqual(member.introducedBy, [aID])
        try await assertEqual(await HTTP.request(.GET, b.anonymousURL + "/notes", client: asC.client).status, 200)
        try await assertEqual(await HTTP.request(.GET, b.anonymousURL + "/photos", client: asC.client).status, 403)
        try await assertEqual(await HTTP.request(.PUT, b.anonymousURL + "/notes/edit", json: ["v": 1], client: asC.client).status, 403,
                       "a member replicates, it does not edit")

        // A list from a node that is no member is ignored.
        b.listener.node.peers.record([], from: c.listener.node.identity.id)
        XCTAssertNotNil(b.listener.node.peers.peer(id: c.listener.node.identity.id))

        // a lets c go: b drops it, and a removed node is not taken back from a later introduction.
        b.listener.node.peers.record([], from: aID)
        XCTAssertNil(b.listener.node.peers.peer(id: c.listener.node.identity.id))
        // Its connections are closed, as a revoked peer's; a new one is refused.
        let again = try PeerClient(to: b, as: c.listener.node.identity)
        defer { Task { await again.shutdown() } }
        try await waitUntil("c's open connection is closed") {
            (try? await HTTP.request(.GET, b.anonymousURL + "/notes", client: asC.client).status) != 200
        }
        try await assertEqual(await HTTP.request(.GET, b.anonymousURL + "/notes", client: again.client).status, 403)
        b.listener.node.peers.record(list, from: aID)
        XCTAssertNotNil(b.listener.node.peers.peer(id: c.listener.node.identity.id))
        XCTAssertTrue(try b.listener.node.peers.remove(id: c.listener.node.identity.id))
        b.listener.node.peers.record(list + [], from: aID)
        XCTAssertNil(b.listener.node.peers.peer(id: c.listener.node.identity.id), "removed here: no introduction brings it back")
        // What the removed node says counts for nothing: it cannot introduce itself, nor a node of its own,
        // whatever record it replays (here a's own list, as a had answered it).
        let mallory = try await startListener { $0.tls = true }
        var forged = Introduction(try XCTUnwrap(a.listener.node.peers.all().first { $0.name == "c" }), databases: ["notes"])
        forged.id = mallory.listener.node.identity.id
        forged.uuid = mallory.listener.node.identity.uuid
        b.listener.node.peers.record(list + [forged], from: c.listener.node.identity.id)
        XCTAssertNil(b.listener.node.peers.peer(id: mallory.listener.node.identity.id))
        XCTAssertNil(b.listener.node.peers.peer(id: c.listener.node.identity.id))
        // Pairing with it again does.
        _ = try await c.join(try b.invite(["notes"]), name: "c")
        XCTAssertEqual(b.listener.node.peers.peer(id: c.listener.node.identity.id)?.isIntroduced, false)
    }
}

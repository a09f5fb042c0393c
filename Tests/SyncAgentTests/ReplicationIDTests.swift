import SyncAgent
import Testing

/// The replication id: what it is made of, and what it must not depend on.
@Suite struct ReplicationIDTests {
    let local = "db:0f2c"
    let remote = "node:9a7e/notes"

    @Test func isStableHexOfSHA256() {
        let id = ReplicationID(local: local, remote: remote, direction: .push, filter: nil)
        #expect(id == ReplicationID(local: local, remote: remote, direction: .push, filter: nil))
        #expect(id.value.count == 64)
        #expect(id.value.allSatisfy { $0.isHexDigit && !$0.isUppercase })
    }

    @Test func dependsOnEachIngredient() {
        let base = ReplicationID(local: local, remote: remote, direction: .push, filter: nil)
        let variants = [
            ReplicationID(local: "db:other", remote: remote, direction: .push, filter: nil),
            ReplicationID(local: local, remote: "node:9a7e/other", direction: .push, filter: nil),
            ReplicationID(local: local, remote: remote, direction: .pull, filter: nil),
            ReplicationID(local: local, remote: remote, direction: .push, filter: .documentIDs(["a"])),
            ReplicationID(local: local, remote: remote, direction: .push, filter: .selector(["type": "note"])),
            ReplicationID(local: local, remote: remote, direction: .push, filter: nil, firstHandOnly: true),
        ]
        #expect(Set(variants.map(\.value)).count == variants.count)
        #expect(!variants.contains(base))
    }

    /// The recipe of a whole-feed pull is as before first-hand pulls were added: its checkpoints are kept.
    @Test func aWholeFeedPullKeepsTheIDItHadBeforeFirstHandPulls() {
        #expect(ReplicationID(local: local, remote: remote, direction: .pull, filter: nil).value == "e70584b5b085002a2a061df2ec6e6d678507e333c93cf124ebc444933b88a0a0")
        #expect(ReplicationID(local: local, remote: remote, direction: .pull, filter: nil, firstHandOnly: true).value != "e70584b5b085002a2a061df2ec6e6d678507e333c93cf124ebc444933b88a0a0")
    }

    @Test func filtersAreCanonical() {
        let ids1 = ReplicationID(local: local, remote: remote, direction: .pull, filter: .documentIDs(["b", "a", "c"]))
        let ids2 = ReplicationID(local: local, remote: remote, direction: .pull, filter: .documentIDs(["c", "a", "b", "a"]))
        #expect(ids1 == ids2)
        let selector1 = ReplicationID(local: local, remote: remote, direction: .pull, filter: .selector(["type": "note", "n": ["$gt": 1]]))
        let selector2 = ReplicationID(local: local, remote: remote, direction: .pull, filter: .selector(["n": ["$gt": 1], "type": "note"]))
        #expect(selector1 == selector2)
    }

    @Test func sourceAndTargetMapToPushAndPull() {
        let push = ReplicationID(sourceIdentity: local, targetIdentity: remote, sourceIsLocal: true, targetIsLocal: false, filter: nil)
        let pull = ReplicationID(sourceIdentity: remote, targetIdentity: local, sourceIsLocal: false, targetIsLocal: true, filter: nil)
        #expect(push == ReplicationID(local: local, remote: remote, direction: .push, filter: nil))
        #expect(pull == ReplicationID(local: local, remote: remote, direction: .pull, filter: nil))
        #expect(push != pull)
    }

    @Test func remoteIdentityIgnoresTheAddress() async throws {
        let a = try await TestListener.start(users: ["someone": "pw"])
        do {
            try await a.catalog.create("addr").setSecurity(["members": ["names": ["someone"]]])
            let byIP = try RemoteEndpoint(url: a.url + "/addr")
            let byName = try RemoteEndpoint(url: a.url.replacingOccurrences(of: "127.0.0.1", with: "localhost") + "/addr")
            let withCredentials = try RemoteEndpoint(url: a.anonymousURL.replacingOccurrences(of: "http://", with: "http://someone:pw@") + "/addr")
            let peerUUID = a.listener.node.identity.uuid.uppercased()
            let given = try RemoteEndpoint(url: a.url + "/addr", peerUUID: peerUUID)
            let identities = [try await byIP.identity(), try await byName.identity(), try await withCredentials.identity()]
            #expect(Set(identities).count == 1)
            #expect(identities[0] == "db:" + (try a.catalog.database("addr").uuid))
            #expect(try await given.identity() == "node:\(peerUUID)/addr")
            for endpoint in [byIP, byName, withCredentials, given] { await endpoint.shutdown() }
        } catch {
            await a.stop()
            throw error
        }
        await a.stop()
    }

    @Test func aPeerUUIDThatIsNotTheServersIsRefused() async throws {
        let a = try await TestListener.start()
        do {
            _ = try a.catalog.create("addr")
            let wrong = try RemoteEndpoint(url: a.url + "/addr", peerUUID: "0123456789abcdef0123456789abcdef")
            let error = await #expect(throws: EndpointError.self) { try await wrong.identity() }
            #expect(error?.error == "wrong_peer")
            #expect(error?.isTransient == false)
            #expect(error?.reason.contains(a.listener.node.identity.uuid) == true)
            await wrong.shutdown()
        } catch {
            await a.stop()
            throw error
        }
        await a.stop()
    }
}

import Foundation
import Testing

@testable import SyncAgent

/// Waiting for an invitation wakes on the stores' changes: it ends when the peer
/// that used it is recorded, or when it is cancelled, with no timer of its own.
struct InvitationWatchTests {
    @Test func theWaitEndsWhenThePeerIsRecordedNotWhenTheSecretIsRedeemed() async throws {
        let directory = try TemporaryDirectory(prefix: "invitation-watch")
        defer { directory.remove() }
        let (invitations, peers) = (InvitationStore(directory: directory.path), PeerStore(directory: directory.path))
        let (invitation, secret) = try invitations.create(databases: ["notes"], lifetime: .seconds(3600))
        let waiting = Task { await InvitationWatch.wait(for: invitation.handle, in: invitations, peers: peers) }
        let uuid = String(repeating: "b", count: 32)
        _ = try invitations.redeem(secret: secret, by: uuid)
        // Redeemed, but the pairing is not recorded yet (it may fail and reopen the invitation).
        #expect(InvitationWatch.outcome(of: invitation.handle, in: invitations, peers: peers) == .open)
        try peers.add(PairedPeer(uuid: uuid, id: NodeID(certificateDER: [1]), name: "b", addresses: [], databases: ["notes"]))
        #expect(await waiting.value == .spent(uuid))
    }

    @Test func aCancellationEndsTheWaitAndALimitEndsItOpen() async throws {
        let directory = try TemporaryDirectory(prefix: "invitation-watch")
        defer { directory.remove() }
        let (invitations, peers) = (InvitationStore(directory: directory.path), PeerStore(directory: directory.path))
        let (invitation, _) = try invitations.create(databases: ["notes"], lifetime: .seconds(3600))
        #expect(await InvitationWatch.wait(for: invitation.handle, in: invitations, peers: peers, atMost: .zero) == .open)
        let waiting = Task { await InvitationWatch.wait(for: invitation.handle, in: invitations, peers: peers) }
        try invitations.cancel(handle: invitation.handle)
        #expect(await waiting.value == .cancelled)
        #expect(await InvitationWatch.wait(for: "nosuch", in: invitations, peers: peers) == .cancelled)
    }
}

import FoundationEssentials

/// Waits for an invitation to be used, to expire or to be cancelled: what
/// `syncd pair` does after printing it. It wakes on the stores' changes and at
/// the expiry time, never on a timer of its own. An invitation counts as used
/// once the peer that used it is recorded (a pairing that cannot be recorded
/// reopens it).
public enum InvitationWatch {
    /// How an invitation stands when the wait ends.
    public enum Outcome: Sendable, Equatable {
        /// Used by the peer with this UUID, now paired.
        case spent(String)
        /// Nobody used it in time.
        case expired
        /// Cancelled, or no such invitation.
        case cancelled
        /// Still open: the wait's limit passed, or the waiting task was cancelled.
        case open
    }

    /// How the invitation `handle` of `store` stands now, its peer looked for in `peers`.
    public static func outcome(of handle: String, in store: InvitationStore, peers: PeerStore, at now: Date = Date()) -> Outcome {
        guard let invitation = try? store.invitation(handle: handle) else { return .cancelled }
        if let uuid = invitation.spentBy {
            // Spent, and its peer being recorded: done once it is (or reopened if that fails).
            return (try? peers.all())?.contains { $0.uuid == uuid } == true ? .spent(uuid) : .open
        }
        if invitation.cancelled { return .cancelled }
        return now >= invitation.expires ? .expired : .open
    }

    /// Waits until the invitation `handle` of `store` ends (its peer recorded in `peers`), or `limit` passes.
    public static func wait(for handle: String, in store: InvitationStore, peers: PeerStore,
                            atMost limit: Duration? = nil) async -> Outcome {
        // Subscribed before the first look, so a change between the two is not missed.
        let changes = [store.changes(), peers.changes()]
        let outcome = outcome(of: handle, in: store, peers: peers)
        guard outcome == .open, let expires = try? store.invitation(handle: handle)?.expires else { return outcome }
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let forward = Task {
            await withTaskGroup(of: Void.self) { group in
                for stream in changes { group.addTask { for await _ in stream { wake.yield() } } }
            }
        }
        let untilExpiry = Duration.milliseconds(Int64(max(0, expires.timeIntervalSinceNow) * 1000) + 1)
        let timer = Task {
            try? await Task.sleep(for: limit.map { min($0, untilExpiry) } ?? untilExpiry)
            wake.finish()
        }
        defer {
            forward.cancel()
            timer.cancel()
        }
        for await _ in wakes {
            let now = Self.outcome(of: handle, in: store, peers: peers)
            if now != .open { return now }
        }
        return Self.outcome(of: handle, in: store, peers: peers)
    }
}

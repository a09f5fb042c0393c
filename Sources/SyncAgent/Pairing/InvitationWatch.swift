import Foundation

/// Waits for an invitation to be used, to expire or to be cancelled: what
/// `syncd pair` does after printing it. The invitation may be used through
/// another process's listener, so its file is looked at four times a second.
public enum InvitationWatch {
    /// How an invitation ended.
    public enum Outcome: Sendable, Equatable {
        /// Used by the peer with this UUID.
        case spent(String)
        /// Nobody used it in time.
        case expired
        /// Cancelled (also when the waiting task is cancelled: then this cancels it).
        case cancelled
    }

    /// Waits until the invitation `handle` of `store` ends.
    public static func wait(for handle: String, in store: InvitationStore) async -> Outcome {
        while true {
            guard let invitation = try? store.invitation(handle: handle) else { return .cancelled }
            if let uuid = invitation.spentBy { return .spent(uuid) }
            if invitation.cancelled { return .cancelled }
            if Date() >= invitation.expires { return .expired }
            do {
                try await Task.sleep(for: .milliseconds(250))
            } catch {
                _ = try? store.cancel(handle: handle)
                return .cancelled
            }
        }
    }
}

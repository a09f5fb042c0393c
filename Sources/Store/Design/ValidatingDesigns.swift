import JSON
import Locking

/// A database's design documents that carry `validate_doc_update`, read once and kept until a
/// design document is written or purged: every write asks for them, and a write to a
/// database without any must cost no read.
final class ValidatingDesigns: Sendable {
    private struct State {
        var designs: [DesignDocument]?
        /// Counts the writes that made ``designs`` stale, so a read begun before one is not kept.
        var generation = 0
    }

    private let state = Locked(State())

    /// The kept designs, or `read`'s, kept unless a design document was written meanwhile.
    func current(read: () throws(StoreError) -> [DesignDocument]) throws(StoreError) -> [DesignDocument] {
        let (kept, generation) = state.withLock { ($0.designs, $0.generation) }
        if let kept { return kept }
        let designs = try read()
        state.withLock { state in
            if state.generation == generation { state.designs = designs }
        }
        return designs
    }

    /// A design document was written or purged: read them again on the next write.
    func invalidate() {
        state.withLock { state in
            state.designs = nil
            state.generation += 1
        }
    }
}

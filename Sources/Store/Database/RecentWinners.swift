import Locking

/// The winning revision of each document written last, as committed, so that `_revs_diff`
/// answers without reading the store when every revision it is asked about is one of them.
///
/// In a group every member lists each new revision to every other: most of what a target is
/// asked about, it has just written (nine times in ten in a group of ten while converging).
///
/// Filled only after a commit, so every revision held is in the store; a purge forgets its
/// documents, and a commit by another connection on the same file forgets them all. Stemming
/// never removes a leaf. A revision not held here is looked up in the store. Holds at most
/// ``capacity`` documents, the last written first kept.
final class RecentWinners: Sendable {
    /// A revision as held: CouchDB's 32 hex digits as two numbers, no string to allocate.
    private struct Winner: Equatable {
        let generation: Int
        let high: UInt64
        let low: UInt64

        /// Nil for a digest that is not 32 lowercase hex digits (not held).
        init?(_ revision: RevisionID) {
            var digest = revision.digest
            guard let (high, low) = digest.withUTF8(Self.digits) else { return nil }
            (generation, self.high, self.low) = (revision.generation, high, low)
        }

        /// Nil for text that is not a revision (as ``RevisionID`` reads it) whose digest is 32 lowercase hex digits.
        init?(text: UnsafeBufferPointer<UInt8>) {
            guard let (generation, digest) = RevisionID.parts(text), let (high, low) = Self.digits(digest) else { return nil }
            (self.generation, self.high, self.low) = (generation, high, low)
        }

        /// 32 lowercase hex digits as two numbers; nil for anything else.
        private static func digits(_ text: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64)? {
            guard text.count == 32 else { return nil }
            func number(_ range: Range<Int>) -> UInt64? {
                var number: UInt64 = 0
                for index in range {
                    let byte = text[index]
                    let digit: UInt8
                    switch byte {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte &- UInt8(ascii: "0")
                    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte &- UInt8(ascii: "a") &+ 10
                    default: return nil
                    }
                    number = number << 4 | UInt64(digit)
                }
                return number
            }
            guard let high = number(0..<16), let low = number(16..<32) else { return nil }
            return (high, low)
        }
    }

    private struct State {
        var winners: [String: Winner] = [:]
        /// The ids held, oldest first from `next` on: the ring the oldest leave from.
        var order: [String] = []
        var next = 0
    }

    /// The most documents held: under 1 MiB with short ids.
    static let capacity = 8192

    private let state = Locked(State())

    /// After a commit: each document's winner now, `nil` for one purged.
    func committed(_ written: [String: RevisionID?]) {
        guard !written.isEmpty else { return }
        state.withLock { state in
            for (id, revision) in written {
                guard let winner = revision.flatMap(Winner.init) else {
                    state.winners[id] = nil
                    continue
                }
                if state.winners.updateValue(winner, forKey: id) != nil { continue }
                if state.order.count < Self.capacity {
                    // A burst takes the whole room at once rather than by doubling it.
                    if state.order.count == Self.capacity / 8 {
                        state.winners.reserveCapacity(Self.capacity)
                        state.order.reserveCapacity(Self.capacity)
                    }
                    state.order.append(id)
                } else {
                    // The slot's id may have been purged, or written again since: either way it goes.
                    state.winners[state.order[state.next]] = nil
                    state.order[state.next] = id
                    state.next = (state.next + 1) % Self.capacity
                }
            }
        }
    }

    /// For each document of `request`, whether every revision asked about is its winner as last committed.
    func holds(_ request: [(id: String, revisions: [RevisionID])]) -> [Bool] {
        state.withLock { state in
            request.map { id, revisions in
                guard let winner = state.winners[id] else { return false }
                return revisions.allSatisfy { Winner($0) == winner }
            }
        }
    }

    /// Whether `revision` is the winner of document `id` as last committed.
    func holds(_ revision: RevisionID, of id: String) -> Bool {
        guard let asked = Winner(revision) else { return false }
        return state.withLock { $0.winners[id] == asked }
    }

    /// Whether the revision whose text is `revision` (`N-digest`) is the winner of document `id`
    /// as last committed: a feed's row asked about as it came, no revision made.
    func holds(text revision: UnsafeBufferPointer<UInt8>, of id: String) -> Bool {
        guard let asked = Winner(text: revision) else { return false }
        return state.withLock { $0.winners[id] == asked }
    }

    /// Forgets every document: another connection committed, or the database went idle.
    func release() {
        state.withLock { $0 = State() }
    }
}

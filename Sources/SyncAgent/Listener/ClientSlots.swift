import Locking

/// Counts what clients hold open (connections, waiting feeds) in all and per
/// client address, and refuses one more beyond either limit, so that no client
/// and no crowd of clients can hold the listener's descriptors and tasks.
///
/// ```swift
/// guard case .success(let slot) = feeds.acquire(for: address) else { throw … }
/// // the slot is given back when `slot` is released
/// ```
final class ClientSlots: Sendable {
    /// Why a slot was refused.
    enum Refusal: Error {
        /// The listener holds its maximum in all.
        case full
        /// This client address holds its maximum.
        case clientFull
    }

    private struct State {
        var total = 0
        var byAddress: [String: Int] = [:]
    }
    private let state = Locked(State())
    /// The most slots in use at once.
    let maximum: Int
    /// The most slots one client address may use at once.
    let maximumPerClient: Int

    init(maximum: Int = .max, maximumPerClient: Int) {
        self.maximum = maximum
        self.maximumPerClient = maximumPerClient
    }

    /// A slot for `address`, given back when the returned ``ClientSlot`` is released.
    func acquire(for address: String) -> Result<ClientSlot, Refusal> {
        let refusal: Refusal? = state.withLock { state in
            if state.total >= maximum { return .full }
            if state.byAddress[address, default: 0] >= maximumPerClient { return .clientFull }
            state.total += 1
            state.byAddress[address, default: 0] += 1
            return nil
        }
        if let refusal { return .failure(refusal) }
        return .success(ClientSlot(slots: self, address: address))
    }

    /// Slots in use.
    var count: Int { state.withLock { $0.total } }

    fileprivate func release(_ address: String) {
        state.withLock { state in
            state.total -= 1
            let left = state.byAddress[address, default: 1] - 1
            state.byAddress[address] = left > 0 ? left : nil
        }
    }
}

/// One slot of ``ClientSlots`` in use; given back when released, however its
/// holder ends (a response body never written releases it too).
final class ClientSlot: Sendable {
    private let slots: ClientSlots
    private let address: String

    fileprivate init(slots: ClientSlots, address: String) {
        self.slots = slots
        self.address = address
    }

    deinit { slots.release(address) }
}

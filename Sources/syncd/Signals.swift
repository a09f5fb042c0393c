import UnixSignals

/// Signals for the commands, through swift-service-lifecycle's `UnixSignalsSequence`.
enum Signals {
    /// Returns the first of `signals` to arrive (from the call on, they no longer end the
    /// process), or nil when the calling task is cancelled first.
    @discardableResult
    static func first(of signals: UnixSignal...) async -> UnixSignal? {
        for await signal in await UnixSignalsSequence(trapping: signals) { return signal }
        return nil
    }
}

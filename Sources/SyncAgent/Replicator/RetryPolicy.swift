/// When to try again after a side could not be reached: exponential backoff
/// from `initialDelay`, doubling to at most `maximumDelay`. ``jitteredDelay(afterFailures:)``
/// cuts each wait by a random share of up to a half, so replications that failed
/// together (a peer restarting under many) do not all come back in the same instant.
public struct RetryPolicy: Sendable, Hashable {
    /// The first wait.
    public var initialDelay: Duration
    /// The longest wait.
    public var maximumDelay: Duration
    /// How many failed attempts in a row a one-shot replication makes before it gives up
    /// (a continuous replication never gives up).
    public var oneShotAttempts: Int

    /// A policy; the defaults wait 1 s, 2 s, 4 s ... up to a minute.
    public init(initialDelay: Duration = ReplicatorTuning.retryInitialDelay, maximumDelay: Duration = ReplicatorTuning.retryMaximumDelay,
                oneShotAttempts: Int = ReplicatorTuning.oneShotAttempts) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.oneShotAttempts = oneShotAttempts
    }

    /// The longest wait after `failures` failed attempts in a row (1 for the first).
    public func delay(afterFailures failures: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(1, failures) where delay < maximumDelay { delay *= 2 }
        return min(delay, maximumDelay)
    }

    /// The wait to use after `failures` failed attempts in a row: between half of
    /// ``delay(afterFailures:)`` and all of it.
    public func jitteredDelay(afterFailures failures: Int) -> Duration {
        delay(afterFailures: failures) * Double.random(in: ReplicatorTuning.retryJitter)
    }
}

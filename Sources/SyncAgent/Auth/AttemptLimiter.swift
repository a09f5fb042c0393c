import FoundationEssentials
import Locking

/// Slows down guessing: each client address may fail `burst` times, then once
/// per `interval`; further attempts are refused without being checked, so a
/// guesser costs the listener nothing. The table is bounded: the addresses
/// that failed longest ago are forgotten first.
final class AttemptLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Date
    }
    private let burst: Double
    private let interval: TimeInterval
    private let capacity: Int
    private let buckets = Locked<[String: Bucket]>([:])

    /// A limiter allowing `burst` failures, then one per `interval` seconds, per address.
    init(burst: Int, interval: TimeInterval, capacity: Int = 10_000) {
        self.burst = Double(burst)
        self.interval = interval
        self.capacity = capacity
    }

    /// Seconds until `address` may try again, or `nil` if it may now.
    func wait(for address: String, now: Date = Date()) -> TimeInterval? {
        buckets.withLock { buckets in
            guard let bucket = buckets[address] else { return nil }
            let tokens = min(burst, bucket.tokens + now.timeIntervalSince(bucket.updated) / interval)
            return tokens >= 1 ? nil : (1 - tokens) * interval
        }
    }

    /// Counts a failed attempt from `address`.
    func failed(_ address: String, now: Date = Date()) {
        buckets.withLock { buckets in
            var bucket = buckets[address] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + now.timeIntervalSince(bucket.updated) / interval) - 1
            bucket.updated = now
            buckets[address] = bucket
            if buckets.count > capacity, let oldest = buckets.min(by: { $0.value.updated < $1.value.updated }) {
                buckets.removeValue(forKey: oldest.key)
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a pthread mutex. Its own thread safety is vouched for by
/// hand (`@unchecked Sendable`); what is built on it is checked by the compiler.
///
/// It has the shape of the standard library's `Mutex`: the value goes in with
/// `sending` and is reached only inside `withLock`, so region checking proves
/// no unprotected reference escapes. It exists because ThreadSanitizer does
/// not see `Mutex`'s futex-based lock on Linux and reports false races under
/// contention, while it understands pthread mutexes; CI runs the suite under
/// ThreadSanitizer.
///
/// Its value is never empty (`Locked(())`): ThreadSanitizer places an access to
/// an empty stored property at the object's own address, which every call
/// reads, and reports a race that is not there. A lock that only serializes
/// work holds what the work last produced.
///
/// ```swift
/// let pending = Locked<[Job]>([])
/// pending.withLock { $0.append(job) }
/// ```
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// Guards `value` from now on.
    public init(_ value: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result: ~Copyable, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` with exclusive access if no one else holds the lock; `nil` otherwise.
    public func withLockIfAvailable<Result: ~Copyable, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

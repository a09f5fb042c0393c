import Dispatch
import FoundationEssentials
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// Threads of their own for store reads that may take long: a query that passes over
/// the database, a filtered page of changes, a listing by thousands of keys.
///
/// Every store call is synchronous and blocks the thread that makes it (see
/// ``Database``). Made from a task, a long one holds a thread of Swift's cooperative
/// pool, which has one per core, and every other task waits. Run here, it holds one
/// of these threads instead, which the OS schedules beside the pool's; the caller's
/// task waits without holding a thread. A cancelled caller stops the scan inside at
/// its next check (the store checks per document), as if it had run in the task.
///
/// ```swift
/// let page = try await ScanThreads.run { try db.changes(options) }
/// ```
public enum ScanThreads {
    /// How many scans run at once; more wait for a free thread, in order.
    public static let count = 4

    /// Runs `reads` on a scan thread and returns its result; a cancellation of the
    /// calling task stops the store's scans in `reads` with ``StoreError/cancelled``.
    public static func run<T: Sendable, Failure: Error>(_ reads: @escaping @Sendable () throws(Failure) -> T) async throws(Failure) -> T {
        let stop = ScanStop()
        let result: Result<T, Failure> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                lanes.submit {
                    ScanStop.current = stop
                    defer { ScanStop.current = nil }
                    if stop.isRequested { return continuation.resume(returning: .failure(cancelled(as: Failure.self))) }
                    do throws(Failure) {
                        continuation.resume(returning: .success(try reads()))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
        } onCancel: {
            stop.request()
        }
        return try result.get()
    }

    /// The error a scan that was stopped before it began gives its caller.
    private static func cancelled<Failure: Error>(as type: Failure.Type) -> Failure {
        if let error = StoreError.cancelled as? Failure { return error }
        if let error = CancellationError() as? Failure { return error }
        // `Failure` is some other error type: `reads` checks the stop first thing itself.
        preconditionFailure("a scan's error type holds neither StoreError nor CancellationError")
    }

    private static let lanes = Lanes(count: count)

    /// The threads and the scans waiting for one.
    private final class Lanes: Sendable {
        private let waiting = Locked<[@Sendable () -> Void]>([])
        private let wake = DispatchSemaphore(value: 0)

        init(count: Int) {
            for index in 0..<count {
                DetachedThread.start(name: "syncd-scan-\(index)") { [self] in self.serve() }
            }
        }

        func submit(_ job: @escaping @Sendable () -> Void) {
            waiting.withLock { $0.append(job) }
            wake.signal()
        }

        private func serve() {
            while true {
                wake.wait()
                guard let job = waiting.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                job()
            }
        }
    }
}

/// Asks the scans of one ``ScanThreads/run(_:)`` to stop; the store's scan loops
/// check it, on a scan thread, where they would check their task's cancellation.
final class ScanStop: Sendable {
    private let requested = Locked(false)

    /// Asks the scan to stop.
    func request() { requested.withLock { $0 = true } }

    /// Whether the scan was asked to stop.
    var isRequested: Bool { requested.withLock { $0 } }

    /// Whether the read running on this thread should stop: its caller was cancelled.
    static var shouldStop: Bool { current?.isRequested ?? Task.isCancelled }

    /// The stop of the scan running on this thread, if it is a scan thread
    /// (a thread-specific value: it is read once per document).
    static var current: ScanStop? {
        get { pthread_getspecific(key).map { Unmanaged<ScanStop>.fromOpaque($0).takeUnretainedValue() } }
        set { pthread_setspecific(key, newValue.map { Unmanaged.passUnretained($0).toOpaque() }) }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
}

#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own, outside Swift's cooperative pool and Dispatch's: for work that
/// blocks for long (a scan, a `poll` on a kernel socket, a deadline that must fire
/// when the pool is stuck). Made with pthreads, so no module needs Foundation's `Thread`.
public enum DetachedThread {
    /// Starts `body` on a new detached thread named `name` (at most 15 bytes are kept).
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let start = Unmanaged.passRetained(ThreadStart(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { argument in
            let start = Unmanaged<ThreadStart>.fromOpaque(argument!).takeRetainedValue()
            DetachedThread.setName(start.name)
            start.body()
            return nil
        }, start)
        precondition(created == 0, "pthread_create failed: \(created)")
        pthread_detach(thread)
    }

    /// Names the calling thread (as `top -H` and `perf` show it) through procfs, which needs
    /// no `_GNU_SOURCE` function; a failure leaves the name it had.
    fileprivate static func setName(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }
}

/// What a new thread runs, handed to it once.
private final class ThreadStart: Sendable {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}

import CMalloc
import Locking

/// Gives the memory malloc holds free back to the kernel once replication falls quiet
/// (the agent's replications call ``request()`` as they fall idle: ``ReplicationConfiguration/onIdle``).
/// After a burst glibc keeps what was freed in its heaps, and only `malloc_trim` returns
/// free pages in the middle of one: an agent of a ten-host group held half of its anonymous
/// memory (20 of 45 MB) that way once converged (docs/benchmarks.md, "Leaner agents").
final class MemoryTrim: Sendable {
    /// The process's one trim: malloc's heaps are the process's.
    static let shared = MemoryTrim()

    /// How long after the last request the trim runs, so the pulls of one burst, falling
    /// idle one after another, and steady traffic make one trim, after it, not one each.
    static let quiet: Duration = .seconds(2)

    private let pending = Locked<Task<Void, Never>?>(nil)

    /// Trims once nothing has asked for ``quiet``: a replication fell idle.
    func request() {
        pending.withLock { task in
            task?.cancel()
            task = Task.detached(priority: .background) {
                guard (try? await Task.sleep(for: Self.quiet)) != nil else { return }
                _ = malloc_trim(0)
            }
        }
    }
}

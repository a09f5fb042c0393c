import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Locking
import Logging
import ServiceLifecycle

/// Bounds how long a graceful shutdown may take. Once one begins, the process
/// ends after `limit` whatever is still running (a client that stopped reading
/// its answer, work that ignores cancellation), so SIGTERM always stops syncd.
/// Committed writes are in SQLite's write-ahead log by then, which survives the exit.
/// The exit status is then ``exitStatus``, not 0: the shutdown was not clean, and
/// systemd (or whoever stopped syncd) should see that it failed.
///
/// Run it in the service group with `successTerminationBehavior: .ignore`.
public struct ShutdownDeadline: Service {
    /// The exit status when the deadline cuts a shutdown short: 70, `EX_SOFTWARE`
    /// of sysexits.h (an internal error: something ignored the shutdown).
    public static let exitStatus: Int32 = 70

    /// The longest a shutdown may take.
    public let limit: Duration
    private let logger: Logger
    private let exit: @Sendable (Int32) -> Void

    /// A deadline of `limit` after a graceful shutdown begins.
    public init(limit: Duration, logger: Logger) {
        self.init(limit: limit, logger: logger, exit: { _exit($0) })
    }

    /// A deadline that ends the process with `exit` (tests pass one that records the status).
    init(limit: Duration, logger: Logger, exit: @escaping @Sendable (Int32) -> Void) {
        self.limit = limit
        self.logger = logger
        self.exit = exit
    }

    /// Waits for a graceful shutdown, then arms the deadline on a thread of its own
    /// (the cooperative pool may be the very thing that is stuck).
    public func run() async throws {
        try? await gracefulShutdown()
        let (limit, logger, exit) = (self.limit, self.logger, self.exit)
        DetachedThread.start(name: "syncd-deadline") {
            let end = ContinuousClock.now + limit
            while ContinuousClock.now < end { usleep(100_000) }  // a signal may cut a sleep short
            logger.warning("shutdown took longer than \(limit); exiting with requests still running")
            exit(ShutdownDeadline.exitStatus)
        }
    }
}

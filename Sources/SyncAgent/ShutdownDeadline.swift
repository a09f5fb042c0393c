import Foundation
import Logging
import ServiceLifecycle

/// Bounds how long a graceful shutdown may take. Once one begins, the process
/// ends after `limit` whatever is still running (a client that stopped reading
/// its answer, work that ignores cancellation), so SIGTERM always stops syncd.
/// Committed writes are in SQLite's write-ahead log by then, which survives the exit.
///
/// Run it in the service group with `successTerminationBehavior: .ignore`.
public struct ShutdownDeadline: Service {
    /// The longest a shutdown may take.
    public let limit: Duration
    private let logger: Logger

    /// A deadline of `limit` after a graceful shutdown begins.
    public init(limit: Duration, logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    /// Waits for a graceful shutdown, then arms the deadline on a thread of its own
    /// (the cooperative pool may be the very thing that is stuck).
    public func run() async throws {
        try? await gracefulShutdown()
        let (limit, logger) = (self.limit, self.logger)
        Thread.detachNewThread {
            let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
            Thread.sleep(forTimeInterval: seconds)
            logger.warning("shutdown took longer than \(limit); exiting with requests still running")
            _exit(0)
        }
    }
}

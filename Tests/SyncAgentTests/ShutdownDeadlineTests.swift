import Logging
import ServiceLifecycle
@testable import SyncAgent
import Testing

/// The shutdown deadline: a graceful shutdown that outlasts it ends the process with a failure status.
@Suite struct ShutdownDeadlineTests {
    /// A service that ignores graceful shutdown, as a stuck request does; only cancellation ends it.
    private struct StuckService: Service {
        func run() async throws { try await Task.sleep(for: .seconds(3600)) }
    }

    @Test func aShutdownOutlastingTheDeadlineExitsWithStatus70() async throws {
        let (statuses, record) = AsyncStream.makeStream(of: Int32.self)
        let limit = Duration.milliseconds(300)
        let logger = Logger(label: "test.shutdown")
        let deadline = ShutdownDeadline(limit: limit, logger: logger, exit: { record.yield($0) })
        // As `syncd agent` and `syncd serve` run it: last, so that it hears of the shutdown first.
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: StuckService()), .init(service: deadline, successTerminationBehavior: .ignore)],
            logger: logger))
        let running = Task { try await group.run() }
        let triggered = ContinuousClock.now
        await group.triggerGracefulShutdown()
        var exits = statuses.makeAsyncIterator()
        let status = await exits.next()
        #expect(status == 70, "EX_SOFTWARE, never 0: systemd must see the shutdown failed")
        #expect(ContinuousClock.now - triggered >= limit)
        running.cancel()
        _ = try? await running.value
    }
}

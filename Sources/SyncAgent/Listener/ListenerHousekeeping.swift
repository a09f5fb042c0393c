import ServiceLifecycle
import Store

/// The HTTP server and, beside it, the listener's housekeeping: closing the
/// connections of a peer as soon as its pairing is revoked, giving back the memory
/// of databases gone idle, and logging the connections cut. It wakes only when a
/// database falls idle or cut connections wait to be logged, so an idle agent sleeps.
struct ListenerHousekeeping<Server: Service>: Service {
    let listener: Listener
    let server: Server

    func run() async throws {
        // Subscribed before serving, so no revocation made once the server runs is missed.
        let revocations = listener.node.peers.changes()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            group.addTask {
                for await _ in revocations { listener.closeRevokedConnections() }
            }
            group.addTask {
                let idle = listener.configuration.databaseIdleTime
                while !Task.isCancelled {
                    listener.node.catalog.releaseIdle(after: idle)
                    listener.connectionCuts.report()
                    // A database first asked for while this sleeps falls idle `idle` after, at the earliest.
                    let now = ContinuousClock.now
                    let due = [listener.node.catalog.nextIdle(after: idle), listener.connectionCuts.nextReport].compactMap { $0 }
                    try? await Task.sleep(until: max(now + .seconds(1), min(due.min() ?? now + idle, now + idle)))
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }
}

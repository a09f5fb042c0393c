import ServiceLifecycle

/// The HTTP server and, beside it, the listener's housekeeping: closing the
/// connections of a peer as soon as its pairing is revoked, and once a second
/// giving back the memory of databases gone idle and logging the connections cut.
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
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    listener.node.catalog.releaseIdle(after: listener.configuration.databaseIdleTime)
                    listener.connectionCuts.report()
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }
}

import ServiceLifecycle

/// A service systemd hears about: `STOPPING=1` when graceful shutdown begins
/// (SIGTERM), and watchdog keep-alives while it runs. `READY=1` is for whoever
/// knows when the service is ready (``Listener/recordedService(notifier:onListening:)`` sends it once bound).
struct NotifiedService<Inner: Service>: Service {
    let notifier: SystemdNotifier
    let inner: Inner

    func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await notifier.keepAlive() }
            defer { group.cancelAll() }
            try await withGracefulShutdownHandler {
                try await inner.run()
            } onGracefulShutdown: {
                notifier.stopping()
            }
        }
    }
}

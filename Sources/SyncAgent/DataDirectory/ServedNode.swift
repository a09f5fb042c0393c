import Foundation
import Logging
import ServiceLifecycle
import Store

/// A data directory served by this process: the directory's lock (so no
/// other process serves it beside this one), its databases, identity, users
/// and peers, and the listener over them. `syncd serve` and `syncd pair`
/// (when no other process serves the directory) both run one.
public final class ServedNode: Sendable {
    /// The exclusive claim on the directory.
    public let lock: DataDirectoryLock
    /// The listener over the directory.
    public let listener: Listener

    /// Claims `directory` and makes its listener; throws if another process serves it.
    /// The store's commits are timed into ``SyncdMetrics``; replications started
    /// in this process are registered with `activeTasks` (see ``Listener/activeTasks``).
    public init(directory: String, configuration: ListenerConfiguration, name: String = NodeName.current,
                activeTasks: ActiveTasks = ActiveTasks(), logger: Logger) throws {
        lock = try DataDirectoryLock(directory: directory)
        var options = Database.Options()
        options.commitObserver = SyncdMetrics.storeCommitObserver
        let catalog = try Catalog(directory: directory, options: options)
        listener = Listener(catalog: catalog, identity: try NodeIdentity.loadOrCreate(in: directory),
                            users: UserStore(directory: directory), name: name, configuration: configuration,
                            activeTasks: activeTasks, logger: logger)
    }

    /// The listener as a service; once bound, `listener.json` records where it
    /// listens, systemd hears `READY=1` (see ``SystemdNotifier``), and `onListening`
    /// gets the record. The record is removed when it stops; systemd hears
    /// `STOPPING=1` when graceful shutdown begins.
    public func service(notifier: SystemdNotifier = SystemdNotifier(),
                        onListening: @escaping @Sendable (ListenerRecord) async -> Void = { _ in }) throws -> some Service {
        let directory = lock.directory
        let configuration = listener.configuration
        let logger = listener.logger
        let recorded = RecordedService(directory: directory, inner: try listener.service { url in
            let port = url.split(separator: ":").last.flatMap { Int($0) } ?? configuration.port
            let record = ListenerRecord(port: port, host: configuration.host, tls: configuration.tls)
            do { try record.save(in: directory) } catch { logger.warning("cannot record the listener: \(error)") }
            notifier.ready(status: "listening on " + record.urls.joined(separator: " "))
            await onListening(record)
        })
        return NotifiedService(notifier: notifier, inner: recorded)
    }

    /// Closes the databases.
    public func close() {
        listener.catalog.close()
    }
}

/// A service that removes `listener.json` when it ends.
private struct RecordedService<Inner: Service>: Service {
    let directory: String
    let inner: Inner

    func run() async throws {
        defer { ListenerRecord.remove(in: directory) }
        try await inner.run()
    }
}

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
    public init(directory: String, configuration: ListenerConfiguration, name: String = NodeName.current,
                logger: Logger) throws {
        lock = try DataDirectoryLock(directory: directory)
        let catalog = try Catalog(directory: directory)
        listener = Listener(catalog: catalog, identity: try NodeIdentity.loadOrCreate(in: directory),
                            users: UserStore(directory: directory), name: name, configuration: configuration, logger: logger)
    }

    /// The listener as a service; once bound, `listener.json` records where it
    /// listens and `onListening` gets the record. The record is removed when it stops.
    public func service(onListening: @escaping @Sendable (ListenerRecord) async -> Void = { _ in }) throws -> some Service {
        let directory = lock.directory
        let configuration = listener.configuration
        let logger = listener.logger
        return RecordedService(directory: directory, inner: try listener.service { url in
            let port = url.split(separator: ":").last.flatMap { Int($0) } ?? configuration.port
            let record = ListenerRecord(port: port, host: configuration.host, tls: configuration.tls)
            do { try record.save(in: directory) } catch { logger.warning("cannot record the listener: \(error)") }
            await onListening(record)
        })
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

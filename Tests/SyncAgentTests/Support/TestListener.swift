import Foundation
import Locking
import Logging
import ServiceLifecycle
import Store
import SyncAgent
import XCTest

/// A listener running in this process on 127.0.0.1 with a port picked by the
/// system, over its own temporary data directory (or a given one).
///
/// It has a server admin, ``adminName``, whose credentials ``url`` carries,
/// so requests to `server.url + …` act as that admin; ``anonymousURL`` has none.
///
/// ```swift
/// let server = try await TestListener.start()
/// defer { await server.stop() }
/// let (status, body) = try await HTTP.json(.GET, server.url + "/")
/// ```
final class TestListener: Sendable {
    /// The base URL with the admin's credentials, such as `http://admin:admin-password@127.0.0.1:41234`.
    let url: String
    /// The base URL without credentials, such as `http://127.0.0.1:41234`.
    let anonymousURL: String
    /// The server admin every test listener has, and its password.
    static let adminName = "admin"
    static let adminPassword = "admin-password"
    /// The listener.
    let listener: Listener
    /// The data directory.
    let directory: String
    /// The catalog being served.
    var catalog: Catalog { listener.node.catalog }
    private let task: Task<Void, any Error>
    private let group: ServiceGroup
    private let temporary: TemporaryDirectory?

    private init(anonymousURL: String, listener: Listener, directory: String, task: Task<Void, any Error>, group: ServiceGroup,
                 temporary: TemporaryDirectory?) {
        self.anonymousURL = anonymousURL
        self.url = anonymousURL.replacingOccurrences(of: "://", with: "://\(Self.adminName):\(Self.adminPassword)@")
        self.listener = listener
        self.directory = directory
        self.task = task
        self.group = group
        self.temporary = temporary
    }

    /// Starts a listener; `configure` adjusts the configuration (host and port stay loopback and 0).
    /// Users can be added before it starts with `users`; its invitations are made and checked at
    /// `clock`'s times when given.
    static func start(directory: String? = nil, users: [String: String] = [:], clock: ManualClock? = nil,
                      maximumDocumentSize: Int = Node.defaultMaximumDocumentSize, agent: (any RunningAgent)? = nil,
                      configure: (inout ListenerConfiguration) -> Void = { _ in }) async throws -> TestListener {
        let temporary = directory == nil ? try TemporaryDirectory(prefix: "syncd-listener") : nil
        let path = directory ?? temporary!.path
        var configuration = ListenerConfiguration()
        configure(&configuration)
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let store = UserStore(directory: path, iterations: 1000)
        try store.setPassword(adminPassword, for: adminName, roles: [UserStore.adminRole])
        for (name, password) in users { try store.setPassword(password, for: name) }
        var logger = Logger(label: "test.listener")
        logger.logLevel = .warning
        var now: (@Sendable () -> Date)?
        if let clock { now = { clock.now } }
        let node = try Node(directory: path, users: store, now: now, maximumDocumentSize: maximumDocumentSize, logger: logger)
        let listener = Listener(node: node, configuration: configuration, agent: agent, logger: logger)
        let (urls, continuation) = AsyncStream.makeStream(of: String.self)
        let service = try listener.service { url in
            continuation.yield(url)
            continuation.finish()
        }
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: service)], logger: logger))
        let task = Task { try await group.run() }
        let url = await withTaskGroup(of: String?.self) { group in
            group.addTask { await urls.first { _ in true } }
            group.addTask {
                try? await Task.sleep(for: .seconds(20))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let url else {
            task.cancel()
            throw TestSupportError("the listener did not start within 20 s")
        }
        return TestListener(anonymousURL: url, listener: listener, directory: path, task: task, group: group, temporary: temporary)
    }

    /// Shuts the server down gracefully (cancelling it if that takes over 5 s),
    /// closes the databases and removes a temporary data directory.
    func stop() async {
        await group.triggerGracefulShutdown()
        let task = self.task
        let watchdog = Task {
            try await Task.sleep(for: .seconds(5))
            task.cancel()
        }
        _ = try? await task.value
        watchdog.cancel()
        listener.node.close()
        temporary?.remove()
    }
}

/// A time that moves only when a test moves it, for what production code times with an injected `now`.
final class ManualClock: Sendable {
    private let time: Locked<Date>

    init(_ start: Date = Date()) { time = Locked(start) }

    var now: Date { time.withLock { $0 } }

    func advance(by interval: TimeInterval) { time.withLock { $0 += interval } }
}

/// A failure of the test machinery itself.
struct TestSupportError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension XCTestCase {
    /// Starts a ``TestListener`` that is stopped when the test ends.
    func startListener(directory: String? = nil, users: [String: String] = [:], clock: ManualClock? = nil,
                       maximumDocumentSize: Int = Node.defaultMaximumDocumentSize, agent: (any RunningAgent)? = nil,
                       configure: (inout ListenerConfiguration) -> Void = { _ in }) async throws -> TestListener {
        let server = try await TestListener.start(directory: directory, users: users, clock: clock,
                                                  maximumDocumentSize: maximumDocumentSize, agent: agent, configure: configure)
        addTeardownBlock { await server.stop() }
        return server
    }
}

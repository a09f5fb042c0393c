import CAvahi
import Glibc
import Locking
import Logging
import Synchronization

/// One avahi client on its own threaded poll, kept connected: it waits for a daemon
/// that is not up yet, and reconnects after the daemon or the bus goes away.
///
/// Threading: avahi runs callbacks on its poll thread with the poll lock held. Every mutable
/// field of a session and of its subclasses is touched only with that lock held, either
/// inside a callback or inside ``withPollLock(_:)`` from another thread; after `close()` has
/// stopped the poll thread, only `close()` touches them. That invariant is why the class is
/// `@unchecked Sendable`. Code running in a callback must never call ``withPollLock(_:)``.
class AvahiSession: @unchecked Sendable {
    let logger: Logger
    private let poll: OpaquePointer
    private var client: OpaquePointer?
    private var reconnectTimer: OpaquePointer?
    private var laterTimer: OpaquePointer?
    private var retained: Unmanaged<AvahiSession>?
    /// The client, while the daemon is up and its host name established.
    private(set) var runningClient: OpaquePointer?
    private(set) var status = DiscoveryStatus.unavailable(.init(reason: .noDaemon, message: "not connected yet"))
    private let statusBroadcast = Broadcast<DiscoveryStatus>()
    /// False once `close()` began; public operations check it before taking the poll lock.
    private let isOpen = Locked(true)

    init(logger: Logger) throws(DiscoveryError) {
        guard let poll = avahi_threaded_poll_new() else { throw .pollCreationFailed }
        self.poll = poll
        self.logger = logger
    }

    /// The pointer avahi hands back to callbacks; valid while the session is started and not closed.
    final var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Connects and starts the poll thread. Call once, right after init.
    final func start() {
        retained = Unmanaged.passRetained(self)
        let api = avahi_threaded_poll_get(poll)!
        reconnectTimer = api.pointee.timeout_new(api, nil, { _, context in
            guard let context else { return }
            Unmanaged<AvahiSession>.fromOpaque(context).takeUnretainedValue().reconnect()
        }, context)
        laterTimer = api.pointee.timeout_new(api, nil, { timer, context in
            guard let context else { return }
            let session = Unmanaged<AvahiSession>.fromOpaque(context).takeUnretainedValue()
            avahi_threaded_poll_get(session.poll)!.pointee.timeout_update(timer, nil)
            session.later()
        }, context)
        connect()
        avahi_threaded_poll_start(poll)
    }

    /// Runs `body` with the poll lock held, or returns nil once the session is closed.
    /// Never call it from an avahi callback (the poll thread already holds the lock).
    final func withPollLock<T: Sendable>(_ body: () -> T) -> T? {
        isOpen.withLock { open -> T? in
            guard open else { return nil }
            avahi_threaded_poll_lock(poll)
            defer { avahi_threaded_poll_unlock(poll) }
            return body()
        }
    }

    /// A stream of status changes that starts with the current status.
    final func statusUpdates() -> AsyncStream<DiscoveryStatus> {
        withPollLock { statusBroadcast.subscribe(replaying: [status]) } ?? AsyncStream { $0.finish() }
    }

    /// The current status.
    final var currentStatus: DiscoveryStatus {
        withPollLock { status } ?? .unavailable(.init(reason: .failed, message: "closed"))
    }

    /// Stops the poll thread and frees every avahi object. Idempotent; never call it from a callback.
    final func close() {
        let wasOpen = isOpen.withLock { open in
            defer { open = false }
            return open
        }
        guard wasOpen else { return }
        avahi_threaded_poll_stop(poll)
        dropClient()
        for timer in [reconnectTimer, laterTimer].compactMap({ $0 }) {
            avahi_threaded_poll_get(poll)!.pointee.timeout_free(timer)
        }
        reconnectTimer = nil
        laterTimer = nil
        avahi_threaded_poll_free(poll)
        statusBroadcast.finish()
        sessionClosed()
        retained?.release()
        retained = nil
    }

    // MARK: Hooks for subclasses; each runs with the poll lock held.

    /// The daemon is up and its host name established: create entry groups and browsers.
    func clientRunning(_ client: OpaquePointer) {}
    /// The daemon's host name is being (re)established: published services must be reset.
    func clientHostNameChanging() {}
    /// The client and all its children are about to be freed: forget their pointers.
    func clientWillBeFreed() {}
    /// The session is closed: finish streams.
    func sessionClosed() {}
    /// The time asked for with ``runLater(after:jitter:)`` has come.
    func later() {}

    /// Calls ``later()`` on the poll thread after `milliseconds` plus a random
    /// share of `jitter` (replacing an earlier request).
    final func runLater(after milliseconds: UInt32, jitter: UInt32) {
        guard let laterTimer else { return }
        var when = timeval()
        avahi_elapse_time(&when, milliseconds, jitter)
        avahi_threaded_poll_get(poll)!.pointee.timeout_update(laterTimer, &when)
    }

    // MARK: Connection

    final func setStatus(_ new: DiscoveryStatus) {
        guard new != status else { return }
        status = new
        // Debug only: whoever follows ``statusUpdates()`` tells the user, once.
        switch new {
        case .available: logger.debug("avahi: connected")
        case .unavailable(let why): logger.debug("avahi: discovery unavailable: \(why)")
        }
        statusBroadcast.yield(new)
    }

    /// Drops the client and makes a new one after `milliseconds` (on the poll thread).
    final func scheduleReconnect(after milliseconds: UInt32) {
        guard let reconnectTimer else { return }
        var when = timeval()
        avahi_elapse_time(&when, milliseconds, 0)
        avahi_threaded_poll_get(poll)!.pointee.timeout_update(reconnectTimer, &when)
    }

    private func reconnect() {
        avahi_threaded_poll_get(poll)!.pointee.timeout_update(reconnectTimer, nil)
        dropClient()
        connect()
    }

    private func connect() {
        var error: Int32 = 0
        let api = avahi_threaded_poll_get(poll)
        // NO_FAIL: with a bus but no daemon the client waits in CONNECTING until the daemon appears.
        let newClient = avahi_client_new(api, AVAHI_CLIENT_NO_FAIL, { client, state, context in
            guard let client, let context else { return }
            Unmanaged<AvahiSession>.fromOpaque(context).takeUnretainedValue().clientStateChanged(client, state)
        }, context, &error)
        if let newClient {
            client = newClient
            return
        }
        // Even with NO_FAIL, creation fails only when the D-Bus system bus cannot be reached.
        let reason: DiscoveryUnavailable.Reason = error == Int32(AVAHI_ERR_NO_DAEMON) ? .noBus : .failed
        setStatus(.unavailable(.init(reason: reason, message: "\(Self.describe(error)) at \(Self.busAddress)")))
        scheduleReconnect(after: 2000)
    }

    private func dropClient() {
        runningClient = nil
        guard let client else { return }
        clientWillBeFreed()
        avahi_client_free(client)
        self.client = nil
    }

    private func clientStateChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            runningClient = client
            setStatus(.available)
            clientRunning(client)
        case AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
            runningClient = nil
            setStatus(.available)
            clientHostNameChanging()
        case AVAHI_CLIENT_CONNECTING:
            runningClient = nil
            setStatus(.unavailable(.init(reason: .noDaemon, message: "waiting for it to start")))
        case AVAHI_CLIENT_FAILURE:
            runningClient = nil
            let error = avahi_client_errno(client)
            let reason: DiscoveryUnavailable.Reason = error == Int32(AVAHI_ERR_DISCONNECTED) ? .disconnected : .failed
            setStatus(.unavailable(.init(reason: reason, message: Self.describe(error))))
            // Free the client from a timer, not from inside its own callback.
            scheduleReconnect(after: 0)
        default:
            break
        }
    }

    static func describe(_ error: Int32) -> String {
        String(cString: avahi_strerror(error))
    }

    private static var busAddress: String {
        if let address = getenv("DBUS_SYSTEM_BUS_ADDRESS"), address.pointee != 0 { return String(cString: address) }
        return "unix:path=/run/dbus/system_bus_socket"
    }
}

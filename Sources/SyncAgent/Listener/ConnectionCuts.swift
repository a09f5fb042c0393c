import Locking
import Logging
import Metrics

/// Connections the listener closed or refused because a deadline passed or a
/// budget was full: counted in `syncd_listener_connections_cut_total{reason}`
/// and logged at most once a minute, never once per connection.
final class ConnectionCuts: Sendable {
    /// Why a connection was cut.
    enum Reason: String, CaseIterable, Sendable {
        /// Its TLS handshake was not done within the handshake timeout.
        case handshakeTimeout = "handshake_timeout"
        /// Its first request head was not complete within the request head timeout.
        case requestHeadTimeout = "request_head_timeout"
        /// A read waited longer than the request body timeout for more of a request's body (408).
        case requestBodyTimeout = "request_body_timeout"
        /// It had sent no request and a newer connection needed its pending slot.
        case pendingFull = "pending_full"
        /// No request on it had proved a user, and a newer connection needed its slot.
        case strangerDisplaced = "stranger_displaced"
        /// Its first request was refused: the listener or its address held the most users' connections (503, 429).
        case connectionsFull = "connections_full"
    }

    private struct State {
        var unlogged: [Reason: Int] = [:]
        var logged: ContinuousClock.Instant?
    }
    private let state = Locked(State())
    private let logger: Logger
    private let now: @Sendable () -> ContinuousClock.Instant

    /// Cuts logged to `logger`; `now` is the clock the minute is measured on.
    init(logger: Logger, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.logger = logger
        self.now = now
    }

    /// Counts one connection cut for `reason`.
    func cut(_ reason: Reason) {
        Counter(label: "syncd_listener_connections_cut_total", dimensions: [("reason", reason.rawValue)]).increment()
        state.withLock { $0.unlogged[reason, default: 0] += 1 }
        report()
    }

    /// When ``report()`` will next have a line to log; `nil` while no cut waits for one.
    var nextReport: ContinuousClock.Instant? {
        state.withLock { state in state.unlogged.isEmpty ? nil : (state.logged ?? now()) + .seconds(60) }
    }

    /// Logs the cuts not logged yet, unless the last such log was less than a minute ago.
    func report() {
        let now = now()
        let counts: [Reason: Int]? = state.withLock { state in
            guard !state.unlogged.isEmpty, state.logged.map({ now - $0 >= .seconds(60) }) ?? true else { return nil }
            defer { state.unlogged = [:] }
            state.logged = now
            return state.unlogged
        }
        guard let counts else { return }
        let listed = Reason.allCases.compactMap { reason in counts[reason].map { "\($0) \(reason.rawValue)" } }
        logger.warning("closed stalled or surplus connections since the last such line: \(listed.joined(separator: ", "))")
    }
}

import FoundationEssentials
import Locking
import Logging
import Store

/// The one service that owns the connection to one paired peer, as Syncthing's
/// connection service does for a device: its ``PeerDialer`` finds where the peer
/// answers, its ``PeerPulls`` pull every shared database over that one
/// connection, and the link moves them to the peer's new address when the
/// address book says it moved, or when they stop getting answers, backing off
/// while the peer cannot be reached.
///
/// Each agent only pulls from its peers; the peer pulls from it in turn, so each
/// revision crosses each link once per direction. What a node offers (its push
/// filter) is applied by its listener to the feeds its peers read.
final class PeerLink: Sendable {
    /// What every link needs from the agent.
    struct Context: Sendable {
        let catalog: Catalog
        let identity: NodeIdentity
        let addresses: AddressBook
        /// Where the pulls are registered for `_active_tasks`, `_scheduler` and the metrics.
        let activeTasks: ActiveTasks
        /// Shared by the pulls into each database (the agent's other links' pulls too).
        let claims: DatabaseClaims
        let logger: Logger
        /// Told after the link's connection state changes (the agent counts the peers online).
        var connectionChanged: @Sendable () -> Void = {}
        /// Where the peer's introductions are kept; `nil`: they are not followed.
        var peers: PeerStore? = nil
        /// How long the link waits after failing to reach the peer, or being refused.
        var retry = ReplicatorTuning.peerRetry
        /// How often the whole feed of a database pulled first-hand is read once (``PeerPulls``).
        var sweepInterval = ReplicatorTuning.wholeFeedSweep
    }

    /// What the link is doing.
    enum ConnectionState: String, Sendable {
        case connecting, online, offline
    }

    /// The peer, as paired.
    let peer: PairedPeer
    private let context: Context
    private let dialer: PeerDialer
    private let pulls: PeerPulls
    private let wakes: (stream: AsyncStream<Wake>, continuation: AsyncStream<Wake>.Continuation)
    private let state = Locked(State())

    private struct State {
        var state = ConnectionState.connecting
        var address: String?
        var reason: String?
        /// Offline, and not reached since: the agent's ``FeedRing`` leaves the peer out.
        var away = false
        /// When the link was last online, if it has been and is no longer.
        var onlineUntil: Date?
        /// A ``Wake/called`` was sent and no wake read since: calls in a burst make one wake, never
        /// crowding out the others (and one crowded out itself does not silence the calls after it).
        var callPending = false
    }

    /// Why the link looks again at where the peer is.
    private enum Wake: Sendable {
        /// The address book changed: the peer may have moved.
        case addresses
        /// What a pull ran into.
        case pulls(PeerPulls.Event)
        /// The pause numbered so, after failing to reach the peer, ended.
        case retry(Int)
        /// The peer called this node: it is up, and knows this node.
        case called
    }

    init(peer: PairedPeer, databases: [String: ReplicationFilter?], context: Context) {
        self.peer = peer
        self.context = context
        let wakes = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .bufferingNewest(8))
        self.wakes = wakes
        dialer = PeerDialer(peer: peer, identity: context.identity, addresses: context.addresses)
        pulls = PeerPulls(peer: peer, databases: databases, context: context) { wakes.continuation.yield(.pulls($0)) }
    }

    /// The databases pulled, with the pull filter of each.
    var databases: [String: ReplicationFilter?] { pulls.databases }

    /// The databases whose first-hand changes only are pulled.
    var firstHand: Set<String> { pulls.firstHand }

    /// Pulls `databases` from now on (recorded at once): replications of databases whose filter
    /// did not change keep running; others stop (they checkpoint) or start, done when the task ends.
    func update(databases: [String: ReplicationFilter?]) -> Task<Void, Never> {
        pulls.update(databases: databases)
    }

    /// Pulls the first-hand changes only of the databases in `firstHand` (recorded at once),
    /// the whole feed of the others; pulls whose kind changed start again, done when the task ends.
    func update(firstHand: Set<String>) -> Task<Void, Never> {
        pulls.update(firstHand: firstHand)
    }

    /// Whether the peer is away: offline, and not reached since.
    var isAway: Bool { state.withLock { $0.away } }

    /// The peer's state, address in use and, when offline, why and until when it was online.
    var connection: (state: ConnectionState, address: String?, reason: String?, onlineUntil: Date?) {
        state.withLock { ($0.state, $0.address, $0.reason, $0.onlineUntil) }
    }

    /// Each database's pull: its state now, and its counts since the agent started
    /// (over every connection the link made, so a document sent twice would show).
    var replications: [String: ReplicationStatus] { pulls.replications }

    /// The peer made a request on a new connection to this node: a pause after failing to
    /// reach it, or after it refused this node (an introduced member learns of this node
    /// about when this node learns of it), ends now.
    func called() {
        let first = state.withLock { state in
            defer { state.callPending = true }
            return !state.callPending
        }
        if first { wakes.continuation.yield(.called) }
    }

    /// Stops every pull and connects again (this node's own addresses changed, so
    /// its open connections may be dead without knowing it).
    func reconnect() async {
        await pulls.stop(quickly: true)
        wakes.continuation.yield(.addresses)
    }

    /// Keeps the databases in sync until cancelled; stops the replications (they checkpoint) before returning.
    ///
    /// Every failure (no answer, refused, reset, a TLS or HTTP error, the peer refusing this
    /// node) makes the link wait longer before it tries again, with jitter, up to a minute;
    /// a pull catching up resets the wait, and a change of the peer's addresses ends it at once.
    /// So does the peer calling this node, after a failure to reach it or a refusal as a node it
    /// did not know: it knows this node now. (A peer refusing one database is not asked again
    /// because it calls, so two peers refusing each other a database never wake each other.)
    func run() async {
        let wakes = self.wakes
        let uuid = peer.uuid.lowercased()
        let watch = Task {
            for await changed in context.addresses.changes() where changed == uuid { wakes.continuation.yield(.addresses) }
        }
        defer { watch.cancel() }
        var failures = 0
        // Refusals are not forgiven by another pull catching up, so a peer refusing one database
        // does not make the link reconnect every second; pairing anew starts a new link.
        var refusals = 0
        var pauses = 0
        var iterator = wakes.stream.makeAsyncIterator()
        var reason = Wake.addresses
        /// Whether the peer called since the pulls last started.
        var calledSinceConnected = false
        /// The next wake, `nil` once cancelled; the next call is sent as a wake again.
        func next() async -> Wake? {
            let wake = await iterator.next()
            state.withLock { $0.callPending = false }
            return wake
        }
        /// Waits after a failure until the pause ends or the peer's addresses change; when
        /// `untilCalled`, also until the peer calls.
        func pause(untilCalled: Bool = true) async -> Wake {
            failures += 1
            pauses += 1
            let number = pauses
            let delay = context.retry.jitteredDelay(afterFailures: max(failures, refusals))
            let timer = Task {
                guard (try? await Task.sleep(for: delay)) != nil else { return }
                wakes.continuation.yield(.retry(number))
            }
            defer { timer.cancel() }
            while let wake = await next() {
                switch wake {
                case .addresses: return wake
                case .called where untilCalled: return wake
                case .retry(number): return wake
                default: continue  // from pulls already stopped, or an earlier pause
                }
            }
            return .retry(number)
        }
        while !Task.isCancelled {
            let candidates = dialer.candidates
            if let current = pulls.connection {
                switch reason {
                case .addresses:
                    // Every candidate is tried at once; the first where the peer answers wins, so a
                    // dead address loses to a live one without waiting for its timeout.
                    if case .reached(let connection) = await dialer.dial(candidates, current: current), connection !== current {
                        await pulls.stop(quickly: true)
                        connected(over: connection)
                        calledSinceConnected = false
                    } else if !candidates.contains(current.address) {
                        await pulls.stop(quickly: true)
                        continue
                    }
                case .pulls(.offline(let why, let answered)):
                    // A pull failed. Without an answer (refused, reset, a silent feed) the address is taken
                    // for dead; after an HTTP error it is kept if it still answers (the pulls retry).
                    var dead = !answered
                    if answered, case .failed = await dialer.dial([current.address], current: current) { dead = true }
                    if dead {
                        await pulls.stop(quickly: true)
                        failed(Self.place(why, at: current.address))
                        reason = await pause()
                        continue
                    }
                case .pulls(.refused(let why, let unknown)):
                    refusals += 1
                    await pulls.stop(quickly: true)
                    // A member introduced here may not have heard of this node yet; it calls once it has
                    // (if it called already, while this refusal was on its way, it is asked again now).
                    let early = unknown && refusals == 1 && peer.isIntroduced
                    failed(Self.place(why, at: current.address), level: early ? .info : .warning)
                    reason = unknown && calledSinceConnected ? .called : await pause(untilCalled: unknown)
                    continue
                case .pulls(.caughtUp):
                    failures = 0
                case .called:
                    calledSinceConnected = true
                case .retry:
                    break
                }
                reason = await next() ?? .retry(0)
                continue
            }
            guard !candidates.isEmpty else {
                failed("no address known (not seen on the LAN, none configured)")
                reason = await next() ?? .retry(0)
                continue
            }
            if connection.state != .offline { set(.connecting, reason: nil) }
            switch await dialer.dial(candidates) {
            case .reached(let connection):
                connected(over: connection)
                calledSinceConnected = false
                reason = await next() ?? .retry(0)
            case .failed(let why):
                failed(why)
                reason = await pause()
            }
        }
        await pulls.stop(quickly: false)
        set(.offline, reason: "stopped")
    }

    /// `why`, naming the address unless it does already.
    static func place(_ why: String, at address: String) -> String {
        why.contains(address) ? why : "\(why) at \(address)"
    }

    /// Marks the peer offline for `reason`, logging it at `level` when the reason is new.
    private func failed(_ reason: String, level: Logger.Level = .warning) {
        let changed = state.withLock { state in
            defer { state.reason = reason }
            return state.state != .offline || state.reason != reason
        }
        set(.offline, reason: reason)
        if changed { context.logger.log(level: level, "peer \(peer.name) is offline: \(reason)") }
    }

    /// Records that the peer answers over `connection` and starts the pulls there.
    private func connected(over connection: PeerConnection) {
        state.withLock {
            $0.state = .online
            $0.address = connection.address
            $0.reason = nil
            $0.away = false
        }
        context.connectionChanged()
        pulls.start(over: connection)
        context.logger.info("replicating with \(peer.name) at \(connection.address)")
    }

    private func set(_ new: ConnectionState, reason: String?) {
        state.withLock { state in
            if state.state == .online && new != .online { state.onlineUntil = Date() }
            state.state = new
            state.address = new == .online ? state.address : nil
            state.reason = reason
            if new == .offline { state.away = true }
        }
        context.connectionChanged()
    }
}

/// How long a connection to the listener may take before it is trusted with a
/// request, and how many connections strangers may hold: the defence against a
/// neighbour who opens connections and stalls (docs/architecture.md, "What one
/// client can hold"). `syncd serve` takes them as options, `syncd agent` from
/// `[listener]` in `syncd.toml`.
public struct ListenerLimits: Sendable, Equatable {
    /// How long a new connection has to finish its TLS handshake; it is closed beyond.
    public var handshakeTimeout: Duration = .seconds(5)
    /// How long a connection has, once its handshake is done (over plain HTTP, once
    /// it is open), to send its first complete request head; it is closed beyond.
    public var requestHeadTimeout: Duration = .seconds(5)
    /// How long a request's body may send nothing while the listener waits for
    /// more of it; the request then gets 408 and the connection is closed.
    public var requestBodyTimeout: Duration = .seconds(30)
    /// The most connections open at once that have not sent a request yet; one
    /// more closes the oldest of them from the most crowded address rather than
    /// being refused. Below what a flood holds, every new connection closes one
    /// and the flood reconnects at once: that churn is what costs the CPU.
    public var maximumPendingConnections = 1_024
    /// How long a connection with no request in flight stays open waiting for the
    /// next one. A request being answered (a long-lived feed) is never cut by it.
    public var idleTimeout: Duration = .seconds(90)
    /// The most connections that have sent a request, open at once, from clients
    /// other than paired peers. One more closes the oldest on which no request
    /// proved a user; when all are users', 503 (paired peers are never refused for them).
    public var maximumConnections = 1_000
    /// The most such connections open at once from one client address (the same rule; 429).
    public var maximumConnectionsPerClient = 100
    /// The most waiting change feeds (longpoll, continuous, eventsource) one
    /// client address may hold open at once (429 beyond).
    public var maximumFeedsPerClient = 50

    /// The defaults: 5 s for the handshake, 5 s for the first request head, 30 s of a stalled body, 90 s idle,
    /// 1,024 pending connections, 1,000 of clients other than peers (100 per address), 50 feeds per address.
    public init() {}
}

import Hummingbird
import JSON
import NIOCore
import NIOHTTPTypes
import NIOSSL
import NIOTLS
import Store

/// What connections may hold on the listener, before and after they are trusted
/// with a request: the deadlines, the pending pool, the pool of clients that are
/// not paired peers, and the tally of connections cut.
struct ConnectionLimits: Sendable {
    /// Connections that have not sent a complete request head.
    let pending: ConnectionPool
    /// Connections that have, from clients other than paired peers.
    let slots: ConnectionPool
    /// The paired peers, whose connections take no slot.
    let peers: PeerStore
    let handshakeTimeout: TimeAmount
    let requestHeadTimeout: TimeAmount
    let requestBodyTimeout: TimeAmount
    let cuts: ConnectionCuts
}

/// Guards one connection. Until its first request head is complete it is
/// pending (``Listener/pendingConnections``): it must finish its TLS handshake within the
/// handshake timeout and then send that head within the request head timeout, or
/// it is closed. With the head it leaves the pending pool; a paired peer's
/// connection (by its client certificate) is then admitted whatever strangers
/// hold, any other joins ``Listener/connectionSlots``, displacing the oldest stranger's
/// connection when that pool is full. When every connection there is a user's, it
/// gets CouchDB's error (503 when the listener is full, 429 when its address is)
/// and is closed.
///
/// While a request's body is being received, the connection must send some of it
/// within the request body timeout of each read that waits for it; beyond, it gets
/// 408 (or, once an answer has begun, nothing more) and is closed. Time the
/// handler spends not reading (a writer busy with what came) is not counted.
final class ConnectionLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limits: ConnectionLimits
    private var started = false
    private var requested = false
    private var deadline: Scheduled<Void>?
    private var refusal: CouchError?
    private var answered = false
    /// A request head came whose body has not ended.
    private var receivingBody = false
    /// The answer to the request in flight has begun.
    private var answering = false
    private var bodyDeadline: Scheduled<Void>?

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        bodyDeadline?.cancel()
        limits.pending.remove(context.channel)
        limits.slots.remove(context.channel)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent, !requested {
            close(context, after: limits.requestHeadTimeout, reason: .requestHeadTimeout)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        bodyDeadline?.cancel()
        bodyDeadline = nil
        switch unwrapInboundIn(data) {
        case .head: receivingBody = true; answering = false
        case .body: break
        case .end: receivingBody = false
        }
        if !requested, case .head = unwrapInboundIn(data) {
            requested = true
            deadline?.cancel()
            // One displaced or past its deadline is being closed: it takes no slot from another.
            if limits.pending.remove(context.channel) { admit(context) }
        }
        guard let refusal else { return context.fireChannelRead(data) }
        guard !answered, case .head = unwrapInboundIn(data) else { return }
        answered = true
        respond(context, refusal)
    }

    /// Answers `error` with CouchDB's body and closes the connection.
    private func respond(_ context: ChannelHandlerContext, _ error: CouchError) {
        var body = error.body.serializedBytes()
        body.append(0x0A)
        var fields = error.headers
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(body.count)
        fields[.connection] = "close"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: error.status, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    func read(context: ChannelHandlerContext) {
        if receivingBody, bodyDeadline == nil {
            let channel = context.channel, limits = limits
            bodyDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: limits.requestBodyTimeout) { [self] in
                limits.cuts.cut(.requestBodyTimeout)
                receivingBody = false
                guard !answering, channel.isActive else { return ConnectionPool.abort(channel) }
                answering = true
                respond(context, CouchError(.requestTimeout, "request_timeout",
                                            "The request body stalled: nothing came for \(limits.requestBodyTimeout.nanoseconds / 1_000_000_000) s."))
            }
        }
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head = unwrapOutboundIn(data) { answering = true }
        context.write(data, promise: promise)
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        if case .success(let displaced?) = limits.pending.add(context.channel) {
            limits.cuts.cut(.pendingFull)
            ConnectionPool.abort(displaced)
        }
        if tls(context) != nil {
            close(context, after: limits.handshakeTimeout, reason: .handshakeTimeout)
        } else {
            close(context, after: limits.requestHeadTimeout, reason: .requestHeadTimeout)
        }
    }

    /// Closes the connection after `delay` unless its request head comes first.
    private func close(_ context: ChannelHandlerContext, after delay: TimeAmount, reason: ConnectionCuts.Reason) {
        deadline?.cancel()
        let channel = context.channel, limits = limits
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
            guard limits.pending.remove(channel) else { return }
            limits.cuts.cut(reason)
            ConnectionPool.abort(channel)
        }
    }

    private func tls(_ context: ChannelHandlerContext) -> NIOSSLServerHandler? {
        try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self)
    }

    private func admit(_ context: ChannelHandlerContext) {
        if let der = try? tls(context)?.peerCertificate?.toDERBytes(), limits.peers.peer(id: NodeID(certificateDER: der)) != nil {
            return
        }
        switch limits.slots.add(context.channel) {
        case .success(let displaced):
            if let displaced {
                limits.cuts.cut(.strangerDisplaced)
                ConnectionPool.abort(displaced)
            }
        case .failure(let why):
            var error = switch why {
            case .full: CouchError(.serviceUnavailable, "service_unavailable", "Too many connections; retry later.")
            case .clientFull: CouchError(.tooManyRequests, "too_many_requests", "Too many connections from this address; retry later.")
            }
            error.headers[.retryAfter] = "1"
            refusal = error
            limits.cuts.cut(.connectionsFull)
        }
    }
}

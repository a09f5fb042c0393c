import Hummingbird
import NIOCore
import NIOHTTPTypes
import NIOSSL
import NIOTLS
import Store

/// What connections may hold on the listener, before and after they are trusted
/// with a request: the deadlines, the pending pool, the slots of clients that are
/// not paired peers, and the tally of connections cut.
struct ConnectionLimits: Sendable {
    /// Connections that have not sent a complete request head.
    let pending: PendingConnections
    /// Connections that have, from clients other than paired peers.
    let slots: ClientSlots
    /// The paired peers, whose connections take no slot.
    let peers: PeerStore
    let handshakeTimeout: TimeAmount
    let requestHeadTimeout: TimeAmount
    let cuts: ConnectionCuts
}

/// Guards one connection. Until its first request head is complete it is
/// pending (``PendingConnections``): it must finish its TLS handshake within the
/// handshake timeout and then send that head within the request head timeout, or
/// it is closed. With the head it leaves the pending pool; a paired peer's
/// connection (by its client certificate) is then admitted whatever strangers
/// hold, any other takes a slot of ``ClientSlots`` or gets CouchDB's error
/// (503 when the listener is full, 429 when its address is) and is closed.
final class ConnectionLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    private let limits: ConnectionLimits
    private var started = false
    private var requested = false
    private var deadline: Scheduled<Void>?
    private var slot: ClientSlot?
    private var refusal: CouchError?
    private var answered = false

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
        limits.pending.remove(context.channel)
        slot = nil
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent, !requested {
            close(context, after: limits.requestHeadTimeout, reason: .requestHeadTimeout)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !requested, case .head = unwrapInboundIn(data) {
            requested = true
            deadline?.cancel()
            limits.pending.remove(context.channel)
            admit(context)
        }
        guard let refusal else { return context.fireChannelRead(data) }
        guard !answered, case .head = unwrapInboundIn(data) else { return }
        answered = true
        var body = refusal.body.serializedBytes()
        body.append(0x0A)
        var fields = refusal.headers
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(body.count)
        fields[.connection] = "close"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: refusal.status, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        if let displaced = limits.pending.add(context.channel) {
            limits.cuts.cut(.pendingFull)
            PendingConnections.abort(displaced)
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
            PendingConnections.abort(channel)
        }
    }

    private func tls(_ context: ChannelHandlerContext) -> NIOSSLServerHandler? {
        try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self)
    }

    private func admit(_ context: ChannelHandlerContext) {
        if let der = try? tls(context)?.peerCertificate?.toDERBytes(), limits.peers.peer(id: NodeID(certificateDER: der)) != nil {
            return
        }
        switch limits.slots.acquire(for: context.channel.remoteAddress?.ipAddress ?? "unknown") {
        case .success(let slot):
            self.slot = slot
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

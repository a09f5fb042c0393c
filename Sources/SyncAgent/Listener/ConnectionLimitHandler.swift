import Hummingbird
import NIOCore
import NIOHTTPTypes
import Store

/// Admits a connection while the listener holds fewer than its maximum in all
/// and from the client's address (``ClientSlots``). A connection beyond either
/// gets CouchDB's error to its first request (503 when the listener is full,
/// 429 when its address is) and is closed; one that sends nothing is closed
/// after ``refusedGrace``.
final class ConnectionLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    /// How long a refused connection may stay open waiting for its request.
    static let refusedGrace = TimeAmount.seconds(5)

    private let connections: ClientSlots
    private var slot: ClientSlot?
    private var refusal: CouchError?
    private var answered = false

    init(connections: ClientSlots) {
        self.connections = connections
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if slot == nil && refusal == nil { admit(context) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        slot = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
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

    private func admit(_ context: ChannelHandlerContext) {
        switch connections.acquire(for: context.channel.remoteAddress?.ipAddress ?? "unknown") {
        case .success(let slot):
            self.slot = slot
        case .failure(let why):
            var error = switch why {
            case .full: CouchError(.serviceUnavailable, "service_unavailable", "Too many connections; retry later.")
            case .clientFull: CouchError(.tooManyRequests, "too_many_requests", "Too many connections from this address; retry later.")
            }
            error.headers[.retryAfter] = "1"
            refusal = error
            let channel = context.channel
            context.eventLoop.scheduleTask(in: Self.refusedGrace) { channel.close(promise: nil) }
        }
    }
}

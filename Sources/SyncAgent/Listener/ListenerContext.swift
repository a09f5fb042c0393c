import Hummingbird
import NIOCore

/// The request context of the listener: Hummingbird's core context plus the
/// connection the request came on, whose TLS client certificate says which
/// paired peer (if any) is asking.
struct ListenerContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The client's IP address, as text.
    var clientAddress: String { channel.remoteAddress?.ipAddress ?? "unknown" }
}

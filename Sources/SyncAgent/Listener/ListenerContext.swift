import Hummingbird
import NIOCore

/// The request context of the listener: Hummingbird's core context plus the
/// connection the request came on, whose TLS client certificate says which
/// paired peer (if any) is asking.
struct ListenerContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection.
    let channel: any Channel
    /// The request's route, once ``AccessMiddleware`` parsed its path.
    var route: Route?
    /// Who is asking, once ``AccessMiddleware`` decided.
    var principal = Principal.anonymous

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The client's IP address, as text; an IPv4 client of a dual-stack (`::`)
    /// listener as plain IPv4, not `::ffff:a.b.c.d`.
    var clientAddress: String {
        guard let address = channel.remoteAddress?.ipAddress else { return "unknown" }
        let mapped = "::ffff:"
        if address.lowercased().hasPrefix(mapped), address.dropFirst(mapped.count).contains(".") {
            return String(address.dropFirst(mapped.count))
        }
        return address
    }
}

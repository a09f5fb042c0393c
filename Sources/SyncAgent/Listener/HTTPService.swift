import FoundationEssentials
import Hummingbird
import HummingbirdCore
import Locking
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// An HTTP server answering with a ``ListenerResponder``, run as Hummingbird's
/// `Application` runs one, less its date cache: a timer that wakes every second for
/// each server, whether anybody asks or not. Here the `Date` header is formatted when
/// a response needs it, at most once a second (``HTTPDate``), so an idle server sleeps.
struct HTTPService: Service {
    let responder: ListenerResponder
    let server: HTTPServerBuilder
    let address: BindAddress
    let onServerRunning: @Sendable (any Channel) async -> Void
    let logger: Logger

    func run() async throws {
        let responder = responder
        let logger = logger
        let date = HTTPDate()
        let service = try server.buildServer(
            configuration: ServerConfiguration(address: address, serverName: "syncd"),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger
        ) { (request, writer: consuming ResponseWriter, channel) in
            let context = ListenerContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
            var response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch let error as HTTPParserError {
                throw error  // answered 400 by the channel handler, which then closes the connection
            } catch {
                logger.debug("request failed: \(error)")
                response = Response(status: .internalServerError)
            }
            response.headers[.date] = date.now
            response.headers[.server] = "syncd"
            do {
                try await writer.write(response: response.head, body: response.body)
            } catch is HTTPParserError {
                // Thrown on, it would have a second response written; any other error closes the connection.
                throw ResponseNotWritten()
            }
        } onServerRunning: { channel in
            await onServerRunning(channel)
        }
        try await service.run()
    }

    /// A response cut off by a request that turned out malformed while it was written.
    private struct ResponseNotWritten: Error {}
}

/// The `Date` header's text (RFC 9110's IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`),
/// formatted at most once a second.
final class HTTPDate: Sendable {
    private let cached = Locked<(second: time_t, text: String)>((-1, ""))

    /// The text for now.
    var now: String {
        let second = time(nil)
        return cached.withLock { cached in
            if cached.second != second { cached = (second, Self.text(second)) }
            return cached.text
        }
    }

    /// The text for `second` seconds after the epoch.
    static func text(_ second: time_t) -> String {
        var time = second
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

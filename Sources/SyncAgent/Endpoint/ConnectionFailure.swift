import AsyncHTTPClient
import FoundationEssentials
import NIOCore
import NIOPosix
import NIOSSL

/// A connection that could not be made, said in plain words ("no route to
/// host", "connection refused") rather than as the socket layer's error.
enum ConnectionFailure {
    /// What kept `error` from connecting, or `nil` when it is not a failure to connect.
    static func describe(_ error: any Error) -> String? {
        switch error {
        case let error as IOError:
            return words(errno: error.errnoCode)
        case let error as NIOConnectionError:
            guard let first = error.connectionErrors.first else { return "host not found" }
            return describe(first.error) ?? "cannot connect"
        case is SocketAddressError:
            return "host not found"
        case let error as HTTPClientError where error == .connectTimeout:
            return "timed out connecting"
        case ChannelError.connectTimeout:
            return "timed out connecting"
        default:
            return nil
        }
    }

    /// Whether `error` is a TLS handshake that failed because the server's certificate is not trusted.
    static func isUntrusted(_ error: any Error) -> Bool { tls(error) == untrusted }

    private static let untrusted = "the server's certificate is not trusted"

    /// What a TLS error means, in plain words (never the library's type names or
    /// source paths), or `nil` when `error` is not one.
    static func tls(_ error: any Error) -> String? {
        guard let error = error as? NIOSSLError else { return nil }
        switch error {
        case .handshakeFailed:
            let text = String(describing: error)
            if text.contains("CERTIFICATE_VERIFY_FAILED") { return untrusted }
            if text.contains("WRONG_VERSION_NUMBER") || text.contains("HTTP_REQUEST") {
                return "the server does not speak TLS (is it serving plain HTTP?)"
            }
            if text.contains("ALERT") { return "the server refused the TLS handshake (does it want a client certificate?)" }
            return "the TLS handshake failed"
        case .uncleanShutdown:
            return "the server closed the TLS connection abruptly"
        default:
            return "the TLS connection failed"
        }
    }

    /// `error` in plain words: a connection, TLS or HTTP client failure without the
    /// library's type names, else (syncd's own errors) its text.
    static func plain(_ error: any Error) -> String {
        if let words = describe(error) ?? tls(error) { return words }
        switch error {
        case let error as HTTPClientError where error == .remoteConnectionClosed: return "the server closed the connection"
        case let error as HTTPClientError where error == .readTimeout: return "timed out waiting for the server"
        case let error as HTTPClientError where error == .deadlineExceeded: return "timed out"
        case let error as IOError where error.errnoCode == ECONNRESET: return "the connection was reset"
        case let error as IOError where error.errnoCode == EPIPE: return "the connection was broken"
        case let error as IOError: return "the connection failed: " + String(cString: strerror(error.errnoCode))
        case let error as HTTPClientError: return "the HTTP request failed: " + error.shortDescription.lowercased()
        case is ChannelError: return "the connection failed"
        default: return RemoteEndpoint.describe(error)
        }
    }

    private static func words(errno: CInt) -> String? {
        switch errno {
        case ECONNREFUSED: "connection refused"
        case EHOSTUNREACH: "no route to host"
        case ENETUNREACH: "network is unreachable"
        case EHOSTDOWN: "host is down"
        case ETIMEDOUT: "timed out connecting"
        default: nil
        }
    }
}

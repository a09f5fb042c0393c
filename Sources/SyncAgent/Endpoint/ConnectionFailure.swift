import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

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

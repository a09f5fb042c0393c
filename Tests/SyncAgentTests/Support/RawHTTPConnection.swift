import Foundation
import JSON

/// A plain TCP connection that sends one HTTP request and reads the answer
/// as it arrives, for streaming feeds whose client must go away on cue.
final class RawHTTPConnection {
    private let socket: Int32
    /// The `Authorization` header line for the URL's user and password, if it has them.
    private let authorization: String
    /// Everything received so far.
    private(set) var received: [UInt8] = []
    /// Whether the server closed the connection (a read found its end, or a reset).
    private(set) var closedByServer = false

    /// Connects to `url`'s host (an IPv4 address) and port, from the loopback
    /// address `source` (such as `127.0.0.2`) when given.
    init(url: String, source: String? = nil) throws {
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port else {
            throw TestSupportError("bad URL \(url)")
        }
        authorization = components.user.map { user in
            "Authorization: Basic " + Data("\(user):\(components.password ?? "")".utf8).base64EncodedString() + "\r\n"
        } ?? ""
        socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestSupportError("socket failed") }
        if let source {
            guard Self.withAddress(source, port: 0, { bind(socket, $0, $1) }) == 0 else {
                _ = Glibc.close(socket)
                throw TestSupportError("bind to \(source) failed")
            }
        }
        let connected = Self.withAddress(host, port: port) { connect(socket, $0, $1) }
        guard connected == 0 else {
            _ = Glibc.close(socket)
            throw TestSupportError("connect to \(url) failed")
        }
    }

    /// Calls `body` with the IPv4 socket address of `host` and `port`.
    private static func withAddress(_ host: String, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// Sends a GET request for `path` (with its query).
    func get(_ path: String) throws {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\(authorization)\r\n".utf8)
        guard send(socket, request, request.count, 0) == request.count else { throw TestSupportError("send failed") }
    }

    /// Sends a POST request for `path` with a JSON `body`.
    func post(_ path: String, json body: String) throws {
        let head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\(authorization)\r\n"
        try write(Array((head + body).utf8))
    }

    /// Sends a request head for `method` and `path` with `headers` and the URL's credentials;
    /// its body, if any, follows with ``write(_:)`` (or ``writeChunk(_:)``).
    func sendHead(_ method: String, _ path: String, headers: [(String, String)]) throws {
        let lines = headers.map { "\($0.0): \($0.1)\r\n" }.joined()
        try write(Array("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(lines)\(authorization)\r\n".utf8))
    }

    /// Sends `bytes` as one chunk of a `Transfer-Encoding: chunked` body; no bytes is the last chunk.
    func writeChunk(_ bytes: [UInt8]) throws {
        try write(Array(String(bytes.count, radix: 16).utf8) + Array("\r\n".utf8) + bytes + Array("\r\n".utf8))
    }

    /// Sends `bytes` as they are (a request written by hand, however broken); a connection the
    /// server closed is an error here, not a SIGPIPE.
    func write(_ bytes: [UInt8]) throws {
        guard send(socket, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw TestSupportError("send failed") }
    }

    /// Reads one answer with a JSON body (at most `timeout`): its status and body, or `nil` if none came.
    func readJSONAnswer(timeout: Duration = .seconds(10)) -> (status: Int, json: JSON)? {
        func split(_ text: String) -> (head: Substring, body: Substring)? {
            guard let end = text.range(of: "\r\n\r\n") else { return nil }
            return (text[..<end.lowerBound], text[end.upperBound...])
        }
        _ = read(until: { text in split(text).map { $0.body.contains("}") } ?? false }, timeout: timeout)
        guard let (head, body) = split(text), let statusText = head.split(separator: " ").dropFirst().first,
              let status = Int(statusText), let open = body.firstIndex(of: "{"), let close = body.lastIndex(of: "}"),
              let json = try? JSON(parsing: Array(body[open...close].utf8)) else { return nil }
        return (status, json)
    }

    /// Closes the sending side: the server sees the end of the request stream.
    func finishSending() { _ = shutdown(socket, Int32(SHUT_WR)) }

    /// Reads until `condition` holds for the text received so far, or `timeout` passes; returns whether it held.
    func read(until condition: (String) -> Bool, timeout: Duration = .seconds(10)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition(String(decoding: received, as: UTF8.self)) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            guard poll(&descriptor, 1, max(1, milliseconds)) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else {
                closedByServer = true
                return condition(String(decoding: received, as: UTF8.self))
            }
            received += buffer[0..<count]
        }
        return true
    }

    /// Reads until the server closes the connection or `timeout` passes; returns whether it closed.
    func closed(within timeout: Duration) -> Bool {
        _ = read(until: { _ in closedByServer }, timeout: timeout)
        return closedByServer
    }

    /// The text received so far.
    var text: String { String(decoding: received, as: UTF8.self) }

    /// Closes the connection.
    func close() { _ = Glibc.close(socket) }
}

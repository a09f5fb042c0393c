import Foundation

/// An HTTP server on loopback that answers each request as a test says, however
/// wrongly: a remote peer gone bad, for the replicator's side of hostile input.
/// One thread serves one connection at a time; every answer closes its connection.
final class HostileRemote: @unchecked Sendable {
    /// `http://127.0.0.1:PORT`.
    let url: String
    private let listening: Int32

    /// Starts serving; `answer` gets the method, the target (path and query) and the body,
    /// and gives the status and body to send.
    init(answer: @escaping @Sendable (_ method: String, _ target: String, _ body: [UInt8]) -> (Int, [UInt8])) throws {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listening, pointer, length) == 0 && listen(listening, 16) == 0 && getsockname(listening, pointer, &length) == 0
            }
        }
        guard bound else { throw TestSupportError("cannot listen on loopback") }
        url = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        self.listening = listening
        Thread.detachNewThread {
            // The thread closes the socket itself once accept fails after stop(): closed
            // earlier, its descriptor could be reused by the next test's server and served here.
            defer { _ = Glibc.close(listening) }
            while true {
                let connection = accept(listening, nil, nil)
                guard connection >= 0 else { return }
                Self.serve(connection, answer)
                _ = Glibc.close(connection)
            }
        }
    }

    /// Stops accepting connections.
    func stop() {
        _ = shutdown(listening, Int32(SHUT_RDWR))
    }

    private static func serve(_ connection: Int32, _ answer: (String, String, [UInt8]) -> (Int, [UInt8])) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        func readMore() -> Bool {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return false }
            received += buffer[0..<count]
            return true
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            headEnd = received.indices.dropLast(3).first { received[$0..<($0 + 4)].elementsEqual(separator) }
            if headEnd == nil, !readMore() { return }
        }
        let head = String(decoding: received[..<headEnd!], as: UTF8.self).split(separator: "\r\n")
        let requestLine = head.first?.split(separator: " ") ?? []
        guard requestLine.count >= 2 else { return }
        let length = head.dropFirst().compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "content-length" ? Int(parts[1].trimmingCharacters(in: .whitespaces)) : nil
        }.first ?? 0
        while received.count < headEnd! + 4 + length, readMore() {}
        let body = Array(received[(headEnd! + 4)...].prefix(length))
        let (status, content) = answer(String(requestLine[0]), String(requestLine[1]), body)
        let response = Array("HTTP/1.1 \(status) X\r\nContent-Type: application/json\r\nContent-Length: \(content.count)\r\nConnection: close\r\n\r\n".utf8) + content
        var sent = 0
        while sent < response.count {
            let count = response[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return }
            sent += count
        }
    }
}

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
    convenience init(answer: @escaping @Sendable (_ method: String, _ target: String, _ body: [UInt8]) -> (Int, [UInt8])) throws {
        try self.init { method, target, body in
            let (status, content) = answer(method, target, body)
            return HostileAnswer(status: status, body: content)
        }
    }

    /// Starts serving; `answer` gets the method, the target (path and query) and the body,
    /// and gives the answer to send, in pieces.
    init(answering answer: @escaping @Sendable (_ method: String, _ target: String, _ body: [UInt8]) -> HostileAnswer) throws {
        let (listening, port) = try CountingForwarder.listenOnLoopback()
        url = "http://127.0.0.1:\(port)"
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

    private static func serve(_ connection: Int32, _ answer: (String, String, [UInt8]) -> HostileAnswer) {
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
        let reply = answer(String(requestLine[0]), String(requestLine[1]), body)
        var noDelay: Int32 = 1
        _ = setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        let answerLength = reply.declaredLength ?? reply.pieces.reduce(0) { $0 + $1.count }
        let responseHead = "HTTP/1.1 \(reply.status) X\r\nContent-Type: \(reply.contentType)\r\nContent-Length: \(answerLength)\r\nConnection: close\r\n\r\n"
        guard sendAll(Array(responseHead.utf8), to: connection) else { return }
        for (index, piece) in reply.pieces.enumerated() {
            reply.beforePiece(index)
            guard sendAll(piece, to: connection) else { return }
        }
    }

    private static func sendAll(_ bytes: [UInt8], to connection: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }
}

/// What a ``HostileRemote`` sends: a status, and a body in pieces sent one at a time,
/// `beforePiece` run before each (to pause, or to wait for the test).
struct HostileAnswer: Sendable {
    var status: Int
    var pieces: [[UInt8]]
    var contentType = "application/json"
    var beforePiece: @Sendable (Int) -> Void = { _ in }
    /// A `Content-Length` other than the pieces' (more: the answer is cut short).
    var declaredLength: Int?

    /// `body` in one piece.
    init(status: Int, body: [UInt8], contentType: String = "application/json") {
        self.status = status
        self.pieces = [body]
        self.contentType = contentType
    }

    /// `body` in pieces of `size` bytes with a short pause before each, so that the
    /// client reads it in many chunks, cut anywhere (inside strings, escapes, boundaries).
    static func slowly(status: Int = 200, _ body: [UInt8], pieceSize size: Int, contentType: String = "application/json") -> HostileAnswer {
        var answer = HostileAnswer(status: status, body: [], contentType: contentType)
        answer.pieces = stride(from: 0, to: body.count, by: size).map { Array(body[$0..<min($0 + size, body.count)]) }
        answer.beforePiece = { _ in usleep(50) }
        return answer
    }
}

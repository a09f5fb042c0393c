import Foundation

/// A Unix datagram socket standing in for systemd's `NOTIFY_SOCKET`: bound to
/// a path (or, for `@name`, the abstract namespace), it collects the
/// notifications a service sends.
final class NotifySocket: @unchecked Sendable {
    /// What to put in `NOTIFY_SOCKET`.
    let address: String
    private let fd: Int32

    /// Binds a socket at `address` (a path, or `@name`).
    init(address: String) throws {
        self.address = address
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: errno \(errno)") }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        var path = Array(address.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: path) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.count + (path.first == 0 ? 0 : 1)
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        guard bound == 0 else {
            close(fd)
            throw TestSupportError("bind \(address): errno \(errno)")
        }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// The next datagram, waiting up to `timeout` seconds; `nil` when none came.
    func receive(timeout: TimeInterval = 60) async -> String? {
        await withCheckedContinuation { continuation in
            // Blocking reads go to a dispatch thread, not one of the few cooperative ones.
            DispatchQueue.global().async {
                let deadline = Date().addingTimeInterval(timeout)
                var buffer = [UInt8](repeating: 0, count: 4096)
                while Date() < deadline {
                    let count = recv(self.fd, &buffer, buffer.count, 0)
                    if count >= 0 { return continuation.resume(returning: String(decoding: buffer[..<count], as: UTF8.self)) }
                }
                continuation.resume(returning: nil)
            }
        }
    }

    /// Waits (up to `timeout` seconds in all) for a datagram with the line `line`;
    /// returns every datagram received until then, that one last, or `nil`.
    func receive(line: String, timeout: TimeInterval = 60) async -> [String]? {
        let deadline = Date().addingTimeInterval(timeout)
        var received: [String] = []
        while Date() < deadline {
            guard let message = await receive(timeout: deadline.timeIntervalSinceNow) else { return nil }
            received.append(message)
            if message.split(separator: "\n").contains(Substring(line)) { return received }
        }
        return nil
    }
}

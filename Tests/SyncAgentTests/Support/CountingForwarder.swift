import Foundation
import Locking

/// A TCP forwarder on loopback to a port there, counting the connections it accepts:
/// how a test sees how many connections (so TLS handshakes) a client opens to a server.
final class CountingForwarder: Sendable {
    /// `127.0.0.1:PORT`, where it accepts.
    let address: String
    private let listening: Int32
    private let accepted = Locked(0)
    private let traffic = Locked(Traffic())

    /// What went through, over all connections.
    private struct Traffic {
        /// Bytes the clients sent.
        var fromClients = 0
        /// Pieces the servers sent (each read on its own) since a client last sent anything.
        var serverPiecesSinceClients = 0
    }

    /// Starts forwarding every connection to `127.0.0.1:port`.
    init(to port: Int) throws {
        let (listening, own) = try Self.listenOnLoopback()
        address = "127.0.0.1:\(own)"
        self.listening = listening
        Thread.detachNewThread { [accepted, traffic] in
            defer { _ = Glibc.close(listening) }
            while true {
                let client = accept(listening, nil, nil)
                guard client >= 0 else { return }
                accepted.withLock { $0 += 1 }
                let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var target = Self.loopback(port: port)
                let connected = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                guard connected == 0 else {
                    _ = Glibc.close(server)
                    _ = Glibc.close(client)
                    continue
                }
                let both = DispatchGroup()
                for (from, to, fromClient) in [(client, server, true), (server, client, false)] {
                    both.enter()
                    Thread.detachNewThread {
                        Self.pump(from, to) { count in
                            traffic.withLock { traffic in
                                if fromClient {
                                    traffic.fromClients += count
                                    traffic.serverPiecesSinceClients = 0
                                } else {
                                    traffic.serverPiecesSinceClients += 1
                                }
                            }
                        }
                        both.leave()
                    }
                }
                both.notify(queue: .global()) {
                    _ = Glibc.close(client)
                    _ = Glibc.close(server)
                }
            }
        }
    }

    /// How many connections were accepted so far.
    var connections: Int { accepted.withLock { $0 } }

    /// How many bytes the clients sent so far, over all connections.
    var bytesFromClients: Int { traffic.withLock { $0.fromClients } }

    /// How many pieces the servers sent (each arriving on its own: a request's answer, a
    /// heartbeat) since a client last sent anything.
    var serverPiecesSinceClientsSpoke: Int { traffic.withLock { $0.serverPiecesSinceClients } }

    /// Stops accepting connections (those open keep going).
    func stop() {
        _ = shutdown(listening, Int32(SHUT_RDWR))
    }

    /// A socket listening on 127.0.0.1 at a port the system picks, and that port.
    static func listenOnLoopback() throws -> (socket: Int32, port: Int) {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listening, pointer, length) == 0 && listen(listening, 64) == 0 && getsockname(listening, pointer, &length) == 0
            }
        }
        guard bound else {
            _ = Glibc.close(listening)
            throw TestSupportError("cannot listen on loopback")
        }
        return (listening, Int(UInt16(bigEndian: address.sin_port)))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    /// Copies `from` to `to` until `from` ends or fails, then ends `to`'s sending side;
    /// the size of each read goes to `counted`.
    private static func pump(_ from: Int32, _ to: Int32, counting counted: (Int) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        loop: while true {
            let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            counted(count)
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { write(to, $0.baseAddress! + sent, count - sent) }
                guard written > 0 else { break loop }
                sent += written
            }
        }
        _ = shutdown(to, Int32(SHUT_WR))
        _ = shutdown(from, Int32(SHUT_RD))
    }
}

import Locking
import NIOSSL

/// Chooses where to reach one paired peer, among the addresses the ``AddressBook``
/// has for it (discovery, configuration, pairing): every candidate is probed at once,
/// each over a ``PeerConnection`` of its own, and the first where the peer answers
/// wins, its connection open for the pulls; the others are shut down.
///
/// The clients pin the peer's certificate, which is read once, the first time, by a TLS
/// handshake that sends nothing and must show the peer's ID; every later probe is `GET /`.
final class PeerDialer: Sendable {
    /// What dialing found.
    enum Outcome {
        /// The peer answers over this connection.
        case reached(PeerConnection)
        /// No candidate answered as the peer; why, per address.
        case failed(String)
    }

    /// The peer, as paired.
    let peer: PairedPeer
    private let identity: NodeIdentity
    private let addresses: AddressBook
    /// The peer's certificate, once read.
    private let certificate = Locked<NIOSSLCertificate?>(nil)

    init(peer: PairedPeer, identity: NodeIdentity, addresses: AddressBook) {
        self.peer = peer
        self.identity = identity
        self.addresses = addresses
    }

    /// Where the peer may be now, best first.
    var candidates: [String] { addresses.candidates(for: peer.uuid).map(\.address) }

    /// The first of `candidates` where the peer answers, or why none did. `current`, the
    /// connection in use, is probed over its own client (so over a connection the pulls
    /// opened, when one is idle) and is the one returned if its address wins.
    func dial(_ candidates: [String], current: PeerConnection? = nil) async -> Outcome {
        let certificate: NIOSSLCertificate
        if let known = self.certificate.withLock({ $0 }) {
            certificate = known
        } else {
            let expected = peer.id.fingerprint
            switch await Self.race(candidates, { address throws(EndpointError) in
                guard let (host, port) = HostPort.split(address) else { throw .cannotConnect(address, "not an address") }
                return try await PeerTrust.fetchCertificate(host: host, port: port, expected: expected, endpoint: address,
                                                            deadline: ReplicatorTuning.peerProbeDeadline)
            }, discard: { _ in }) {
            case .won(let read):
                certificate = read
                self.certificate.withLock { $0 = read }
            case .lost(let why):
                return .failed(why)
            }
        }
        let (identity, uuid) = (self.identity, peer.uuid)
        let raced = await Self.race(candidates, { address throws(EndpointError) in
            let connection = if let current, current.address == address {
                current
            } else {
                try PeerConnection(address: address, certificate: certificate, identity: identity, peerUUID: uuid)
            }
            do throws(EndpointError) {
                try await connection.probe()
            } catch {
                if connection !== current { await connection.shutdown() }
                throw error
            }
            return connection
        }, discard: { (connection: PeerConnection) in
            if connection !== current { await connection.shutdown() }
        })
        switch raced {
        case .won(let connection): return .reached(connection)
        case .lost(let why): return .failed(why)
        }
    }

    /// What a race of the candidates found.
    private enum Raced<Value> {
        case won(Value)
        /// Why each candidate failed, joined.
        case lost(String)
    }

    /// Runs `attempt` for every candidate at once and returns the first to succeed,
    /// without waiting for the others: those still running are cancelled, and what one
    /// of them returns all the same goes to `discard`.
    private static func race<Value: Sendable>(
        _ candidates: [String], _ attempt: @escaping @Sendable (String) async throws(EndpointError) -> Value,
        discard: @escaping @Sendable (Value) async -> Void
    ) async -> Raced<Value> {
        guard !candidates.isEmpty else { return .lost("no address known") }
        let (results, continuation) = AsyncStream.makeStream(of: Result<Value, EndpointError>.self)
        let decided = Locked(false)
        let attempts = candidates.map { candidate in
            Task {
                do throws(EndpointError) {
                    let value = try await attempt(candidate)
                    let first = decided.withLock { decided in
                        defer { decided = true }
                        return !decided
                    }
                    if first { continuation.yield(.success(value)) } else { await discard(value) }
                } catch {
                    continuation.yield(.failure(error))
                }
            }
        }
        defer { for attempt in attempts { attempt.cancel() } }
        var failures: [String] = []
        for await result in results {
            switch result {
            case .success(let value): return .won(value)
            case .failure(let error): failures.append(PeerLink.place(error.reason, at: error.endpoint))
            }
            if failures.count == candidates.count { break }
        }
        return .lost(failures.joined(separator: "; "))
    }
}

import NIOCore
import NIOPosix
import NIOSSL

/// How an HTTPS endpoint's certificate is trusted: the system's roots, one
/// pinned certificate (a paired peer's self-signed one), or the SHA-256
/// fingerprint of that certificate when only the fingerprint is known.
public enum PeerTrust: Sendable {
    /// The system's trust roots and host name verification.
    case system
    /// Only this certificate, whatever host name it names.
    case certificate(NIOSSLCertificate)
    /// Only a certificate whose DER encoding has this SHA-256 (hex, colons and
    /// case ignored, or a node ID), verified in the TLS handshake's callback.
    case fingerprint(String)

    /// The SHA-256 of a certificate's DER encoding, lower-case hex.
    public static func fingerprint(of certificate: NIOSSLCertificate) throws -> String {
        NodeID(certificateDER: try certificate.toDERBytes()).fingerprint
    }

    /// `fingerprint` (hex with or without colons, or a node ID) as 64 lower-case hex digits.
    static func normalized(_ fingerprint: String) -> String {
        NodeID(fingerprint)?.fingerprint ?? fingerprint.lowercased()
    }

    /// Connects once, reads the server's certificate and returns it if its
    /// fingerprint is `expected`; any other certificate ends the handshake.
    static func fetchCertificate(host: String, port: Int, expected: String, endpoint: String,
                                 deadline: TimeAmount = .seconds(10)) async throws(EndpointError) -> NIOSSLCertificate {
        /// What the handshake showed.
        enum Seen { case matching(NIOSSLCertificate), other, nothing }
        let wanted = normalized(expected)
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.next().makePromise(of: Seen.self)
        do {
            let context = try NIOSSLContext(configuration: TLSSettings.system())
            let channel = try await ClientBootstrap(group: group)
                .connectTimeout(deadline)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handler = try NIOSSLClientHandler(context: context, serverHostname: nil) { chain, verdict in
                            let leaf = chain.first
                            let matches = (try? leaf.map(fingerprint(of:))) == wanted
                            promise.succeed(matches ? .matching(leaf!) : .other)
                            verdict.succeed(matches ? .certificateVerified : .failed)
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                }
                .connect(host: host, port: port).get()
            // A server that accepts the connection but never finishes the handshake is given up on.
            let giveUp = channel.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
            channel.closeFuture.whenComplete { _ in promise.succeed(.nothing) }
            let seen = try await promise.futureResult.get()
            giveUp.cancel()
            try? await channel.close()
            switch seen {
            case .matching(let certificate):
                return certificate
            case .other:
                throw EndpointError(status: 495, error: "certificate_mismatch",
                                    reason: "the server's certificate does not have the pinned fingerprint", endpoint: endpoint)
            case .nothing:
                throw EndpointError.unreachable(endpoint, "the server sent no certificate within \(deadline.nanoseconds / 1_000_000_000) s (is it serving HTTPS?)")
            }
        } catch let error as EndpointError {
            throw error
        } catch {
            promise.succeed(.nothing)
            if let failure = ConnectionFailure.describe(error) { throw .cannotConnect(endpoint, failure) }
            throw .unreachable(endpoint, "TLS connection failed: \(error)")
        }
    }
}

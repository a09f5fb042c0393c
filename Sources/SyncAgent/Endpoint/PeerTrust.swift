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

    /// `fingerprint` (hex with or without colons, or a node ID) as 64 lower-case hex digits.
    static func normalized(_ fingerprint: String) -> String {
        NodeID(fingerprint)?.fingerprint ?? fingerprint.lowercased()
    }

    /// Connects once, reads the server's certificate and returns it if its
    /// fingerprint is `expected`; any other certificate ends the handshake.
    static func fetchCertificate(
        host: String, port: Int, expected: String, endpoint: String,
        deadline: TimeAmount = ReplicatorTuning.pinnedCertificateDeadline
    ) async throws(EndpointError) -> NIOSSLCertificate {
        let certificate = try await presentedCertificate(host: host, port: port, endpoint: endpoint, deadline: deadline)
        let seen = NodeID(certificateDER: (try? certificate.toDERBytes()) ?? [])
        guard seen.fingerprint == normalized(expected) else {
            throw EndpointError(status: 495, error: "certificate_mismatch",
                                reason: "the server's certificate does not have the pinned fingerprint: its node ID is \(seen)",
                                endpoint: endpoint)
        }
        return certificate
    }

    /// The server's certificate is not trusted (system roots, or no pin): a final error
    /// naming the node ID that `host` presents, so that a person can check it and pin it.
    static func untrusted(host: String, port: Int, endpoint: String) async -> EndpointError {
        let seen = try? await presentedCertificate(host: host, port: port, endpoint: endpoint,
                                                   deadline: ReplicatorTuning.untrustedCertificateDeadline)
        let id = seen.flatMap { try? $0.toDERBytes() }.map { NodeID(certificateDER: $0).description }
        return EndpointError(status: 495, error: "certificate_untrusted",
                             reason: "the server's certificate is not trusted" + (id.map { " (its node ID is \($0))" } ?? ""),
                             endpoint: endpoint)
    }

    /// The certificate `host` presents in a TLS handshake, which is then ended:
    /// nothing is sent to a server whose certificate is not checked yet.
    private static func presentedCertificate(host: String, port: Int, endpoint: String,
                                             deadline: TimeAmount) async throws(EndpointError) -> NIOSSLCertificate {
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.next().makePromise(of: NIOSSLCertificate?.self)
        do {
            let context = try NIOSSLContext(configuration: TLSSettings.certificateReading)
            let channel = try await ClientBootstrap(group: group)
                .connectTimeout(deadline)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handler = try NIOSSLClientHandler(context: context, serverHostname: nil) { chain, verdict in
                            promise.succeed(chain.first)
                            verdict.succeed(NIOSSLVerificationResult.failed)
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                }
                .connect(host: host, port: port).get()
            // A server that accepts the connection but never finishes the handshake is given up on.
            let giveUp = channel.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
            channel.closeFuture.whenComplete { _ in promise.succeed(Optional<NIOSSLCertificate>.none) }
            let seen = try await promise.futureResult.get()
            giveUp.cancel()
            try? await channel.close()
            guard let seen else {
                throw EndpointError.unreachable(endpoint, "the server sent no certificate within \(deadline.nanoseconds / 1_000_000_000) s (is it serving HTTPS?)")
            }
            return seen
        } catch let error as EndpointError {
            throw error
        } catch {
            promise.succeed(nil)
            if let failure = ConnectionFailure.describe(error) { throw .cannotConnect(endpoint, failure) }
            throw .unreachable(endpoint, "TLS connection failed: \(ConnectionFailure.tls(error) ?? "the handshake failed")")
        }
    }
}

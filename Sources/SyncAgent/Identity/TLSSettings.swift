import NIOCore
import NIOSSL

/// The TLS settings of every connection syncd makes or accepts, in one place:
/// TLS 1.2 and 1.3 only; the node's certificate presented both as server and
/// as client; a peer trusted by its pinned certificate alone.
public enum TLSSettings {
    /// The listener's: presents the node's certificate and asks for a client
    /// certificate without requiring one (users and third-party replicators
    /// have none). A client certificate is accepted at the handshake by
    /// ``acceptClientCertificate(_:_:)`` and judged per request by its
    /// fingerprint, so an unpaired node can still reach the pairing endpoint.
    public static func server(_ identity: NodeIdentity) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try identity.sslCertificate())],
            privateKey: .privateKey(try identity.sslPrivateKey())
        )
        configuration.minimumTLSVersion = .tlsv12
        // TLS 1.2 with AEAD suites only (Mozilla's "intermediate" list): no CBC, no SHA-1.
        // TLS 1.3's suites are all AEAD.
        configuration.cipherSuiteValues = aeadSuites
        configuration.certificateVerification = .optionalVerification
        configuration.sendCANameList = false
        return configuration
    }

    /// The TLS 1.2 suites the listener accepts: ECDHE key exchange with AES-GCM or ChaCha20-Poly1305.
    static let aeadSuites: [NIOTLSCipher] = [
        .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ]

    /// The listener's verification callback: any client certificate is
    /// accepted here; possession of its key is proven by the handshake itself,
    /// and what it may do is decided by its fingerprint.
    public static func acceptClientCertificate(_ chain: [NIOSSLCertificate], _ promise: EventLoopPromise<NIOSSLVerificationResult>) {
        promise.succeed(chain.isEmpty ? .failed : .certificateVerified)
    }

    /// A client's that trusts exactly `peer` (whatever host name it names) and,
    /// when `identity` is given, presents it as the client certificate.
    public static func client(trusting peer: NIOSSLCertificate, as identity: NodeIdentity? = nil) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.trustRoots = .certificates([peer])
        configuration.certificateVerification = .noHostnameVerification
        if let identity {
            configuration.certificateChain = [.certificate(try identity.sslCertificate())]
            configuration.privateKey = .privateKey(try identity.sslPrivateKey())
        }
        return configuration
    }

    /// A client's that only reads the server's certificate, whose verification callback
    /// ends every handshake: it trusts nothing, so it does not load the system's roots
    /// (a third of the time from a pairing to the first document, in a debug build).
    static var certificateReading: TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.trustRoots = .certificates([])
        return configuration
    }

    /// A client's that trusts the system's roots and checks host names.
    public static func system() -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }
}

import Crypto
import Foundation
import NIOSSL
import X509

/// Who this node is: a stable UUID, a P-256 key and a self-signed X.509
/// certificate, made on first start and kept in the data directory.
///
/// Peers learn the certificate's ``fingerprint`` through discovery or pairing
/// and pin it, so a TLS connection proves it reached this node and no other.
/// The private key file is readable by its owner only.
///
/// ```swift
/// let identity = try NodeIdentity.loadOrCreate(in: "/var/lib/syncd")
/// print(identity.uuid, identity.fingerprint)
/// ```
public struct NodeIdentity: Sendable {
    /// The node's UUID: 32 lower-case hex digits, never changed (`GET /` answers it).
    public let uuid: String
    /// The certificate, DER-encoded.
    public let certificateDER: [UInt8]
    /// The certificate, PEM-encoded.
    public let certificatePEM: String
    /// The private key, PEM-encoded (PKCS#8).
    let privateKeyPEM: String

    /// The SHA-256 of the certificate's DER bytes, lower-case hex.
    public var fingerprint: String { Self.fingerprint(of: certificateDER) }

    /// The SHA-256 fingerprint of a DER-encoded certificate, lower-case hex.
    public static func fingerprint(of der: [UInt8]) -> String {
        SHA256.hash(data: der).map { String(format: "%02x", $0) }.joined()
    }

    /// File names in the data directory.
    static let uuidFile = "node-uuid"
    static let keyFile = "node-key.pem"
    static let certificateFile = "node-cert.pem"

    /// Reads the identity from `directory`, making any part that is missing.
    public static func loadOrCreate(in directory: String) throws -> NodeIdentity {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let uuidPath = directory + "/" + uuidFile
        let keyPath = directory + "/" + keyFile
        let certificatePath = directory + "/" + certificateFile

        var uuid = (try? String(contentsOfFile: uuidPath, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        if uuid.isEmpty {
            uuid = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            try writeFile(uuidPath, contents: uuid + "\n", mode: 0o644)
        }

        let key: P256.Signing.PrivateKey
        var madeKey = false
        if let pem = try? String(contentsOfFile: keyPath, encoding: .utf8) {
            try checkPrivate(keyPath)
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } else {
            key = P256.Signing.PrivateKey()
            try writeFile(keyPath, contents: key.pemRepresentation, mode: 0o600)
            madeKey = true
        }

        var certificate: Certificate?
        if !madeKey, let pem = try? String(contentsOfFile: certificatePath, encoding: .utf8),
           let existing = try? Certificate(pemEncoded: pem),
           existing.publicKey == Certificate.PublicKey(key.publicKey) {
            certificate = existing
        }
        if certificate == nil {
            let made = try makeCertificate(key: key, uuid: uuid)
            try writeFile(certificatePath, contents: try made.serializeAsPEM().pemString, mode: 0o644)
            certificate = made
        }
        let document = try certificate!.serializeAsPEM()
        return NodeIdentity(uuid: uuid, certificateDER: document.derBytes, certificatePEM: document.pemString,
                            privateKeyPEM: key.pemRepresentation)
    }

    /// Refuses a key file that others than its owner may read or write, as ssh does:
    /// such a key may be known to someone else.
    static func checkPrivate(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw UnprotectedKeyError(path: path, mode: mode)
        }
    }

    /// A self-signed certificate for `key`. KeyUsage includes keyCertSign so
    /// that a peer can use the certificate itself as its only trust root.
    static func makeCertificate(key: P256.Signing.PrivateKey, uuid: String) throws -> Certificate {
        let name = try DistinguishedName {
            OrganizationName("syncd")
            CommonName("syncd node \(uuid)")
        }
        let now = Date()
        return try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-86_400),
            notValidAfter: now.addingTimeInterval(100 * 365 * 86_400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                try ExtendedKeyUsage([.serverAuth, .clientAuth])
                SubjectAlternativeNames([.dnsName("localhost"), .dnsName(uuid + ".syncd")])
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
    }

    /// A TLS server configuration presenting this node's certificate.
    public func serverTLSConfiguration() throws -> TLSConfiguration {
        TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: certificateDER, format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem))
        )
    }

    /// A TLS client configuration that trusts only `certificateDER` (a
    /// peer's pinned certificate); host names are not checked, the certificate is.
    public static func pinnedClientTLSConfiguration(trusting certificateDER: [UInt8]) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates([try NIOSSLCertificate(bytes: certificateDER, format: .der)])
        configuration.certificateVerification = .noHostnameVerification
        return configuration
    }

    /// Writes `contents` to a new file created with `mode`, replacing any old one atomically.
    private static func writeFile(_ path: String, contents: String, mode: mode_t) throws {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, mode)
        guard fd >= 0 else { throw IdentityError(path: path, errno: errno) }
        let bytes = Array(contents.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, mode)
        fsync(fd)
        close(fd)
        guard written == bytes.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw IdentityError(path: path, errno: errno)
        }
    }
}

/// A file of the node identity could not be written.
public struct IdentityError: Error, CustomStringConvertible {
    /// The file.
    public let path: String
    /// The system error number.
    public let errno: Int32

    /// What failed, for people.
    public var description: String { "cannot write \(path): \(String(cString: strerror(errno)))" }
}

/// The node's private key file may be read or written by others than its owner.
public struct UnprotectedKeyError: Error, CustomStringConvertible {
    /// The key file.
    public let path: String
    /// Its permission bits.
    public let mode: mode_t

    /// What is wrong and how to fix it, for people.
    public var description: String {
        "\(path) is open to others (mode \(String(mode, radix: 8))): make it its owner's only (chmod 600 \(path))"
    }
}

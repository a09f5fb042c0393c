import Crypto
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import NIOSSL
import Store
import SwiftASN1
import X509

/// Who this node is: a stable UUID, a P-256 key and a self-signed X.509
/// certificate, made on first start and kept in the data directory.
///
/// The certificate names the UUID (its subject is `syncd node <uuid>`). A
/// certificate says whatever its maker chose, so the UUID is bound at pairing:
/// once a peer is paired, its UUID is accepted only with its ID, and another
/// node claiming it is refused. The node's ``id`` is the certificate's SHA-256 fingerprint;
/// peers pin it at pairing, and it is this node's identity both as a TLS
/// server and as a TLS client. The private key file is readable by its owner only.
///
/// ```swift
/// let identity = try NodeIdentity.loadOrCreate(in: "/var/lib/syncd")
/// print(identity.uuid, identity.id)
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

    /// The node ID: the certificate's fingerprint in its readable form.
    public var id: NodeID { NodeID(certificateDER: certificateDER) }

    /// The SHA-256 of the certificate's DER bytes, lower-case hex.
    public var fingerprint: String { id.fingerprint }

    /// File names in the data directory.
    static let uuidFile = "node-uuid"
    static let keyFile = "node-key.pem"
    static let certificateFile = "node-cert.pem"
    /// The subject's common name is this prefix and the UUID.
    static let commonNamePrefix = "syncd node "

    /// Whether `directory` holds a node's identity (a command that only reads it must not make one).
    public static func exists(in directory: String) -> Bool {
        FileManager.default.fileExists(atPath: directory + "/" + uuidFile)
    }

    /// Reads the identity from `directory`, making any part that is missing.
    public static func loadOrCreate(in directory: String) throws -> NodeIdentity {
        try DataDirectory.create(directory)
        let uuidPath = directory + "/" + uuidFile
        let keyPath = directory + "/" + keyFile
        let certificatePath = directory + "/" + certificateFile

        var uuid = (try? String(contentsOfFile: uuidPath, encoding: .utf8))?.trimmingWhitespace(newlines: true) ?? ""
        if uuid.isEmpty {
            uuid = Hex.string((0..<16).map { _ in UInt8.random(in: .min ... .max) })
            try write(uuid + "\n", to: uuidPath, mode: 0o644)
        }

        let key: P256.Signing.PrivateKey
        var madeKey = false
        if let pem = try? String(contentsOfFile: keyPath, encoding: .utf8) {
            try checkPrivate(keyPath)
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } else {
            key = P256.Signing.PrivateKey()
            try write(key.pemRepresentation, to: keyPath, mode: 0o600)
            madeKey = true
        }

        var certificate: Certificate?
        if !madeKey, let pem = try? String(contentsOfFile: certificatePath, encoding: .utf8),
           let existing = try? Certificate(pemEncoded: pem),
           existing.publicKey == Certificate.PublicKey(key.publicKey),
           Self.uuid(in: existing) == uuid {
            certificate = existing
        }
        if certificate == nil {
            let made = try makeCertificate(key: key, uuid: uuid)
            try write(try made.serializeAsPEM().pemString, to: certificatePath, mode: 0o644)
            certificate = made
        }
        let document = try certificate!.serializeAsPEM()
        return NodeIdentity(uuid: uuid, certificateDER: document.derBytes, certificatePEM: document.pemString,
                            privateKeyPEM: key.pemRepresentation)
    }

    /// The node UUID a certificate names, `nil` if it is not a syncd node's.
    public static func uuid(inCertificateDER der: [UInt8]) -> String? {
        (try? Certificate(derEncoded: der)).flatMap(uuid(in:))
    }

    static func uuid(in certificate: Certificate) -> String? {
        for attribute in certificate.subject.flatMap({ $0 }) where attribute.type == .RDNAttributeType.commonName {
            let name = String(describing: attribute.value)
            guard name.hasPrefix(commonNamePrefix) else { continue }
            let uuid = String(name.dropFirst(commonNamePrefix.count))
            if uuid.utf8.count == 32, Hex.bytes(uuid) != nil, uuid == uuid.lowercased() { return uuid }
        }
        return nil
    }

    /// Refuses a key file that others than its owner may read or write, as ssh does:
    /// such a key may be known to someone else.
    static func checkPrivate(_ path: String) throws {
        guard let mode = FileStatus(path: path)?.permissions else { return }
        guard mode & 0o077 == 0 else {
            throw UnprotectedKeyError(path: path, mode: mode)
        }
    }

    /// A self-signed end-entity certificate for `key` naming `uuid`. It is no
    /// CA: peers trust it by its fingerprint, never as an issuer.
    static func makeCertificate(key: P256.Signing.PrivateKey, uuid: String) throws -> Certificate {
        let name = try DistinguishedName {
            OrganizationName("syncd")
            CommonName(commonNamePrefix + uuid)
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
                Critical(BasicConstraints.notCertificateAuthority)
                try ExtendedKeyUsage([.serverAuth, .clientAuth])
                SubjectAlternativeNames([.dnsName(uuid + ".syncd")])
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
    }

    /// The certificate as NIOSSL takes it.
    func sslCertificate() throws -> NIOSSLCertificate {
        try NIOSSLCertificate(bytes: certificateDER, format: .der)
    }

    /// The private key as NIOSSL takes it.
    func sslPrivateKey() throws -> NIOSSLPrivateKey {
        try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
    }

    /// Writes `contents` to a file created with `mode`, replacing any old one atomically.
    private static func write(_ contents: String, to path: String, mode: mode_t) throws {
        try StateFile<Int>.writeAtomically(Data(contents.utf8), to: path, mode: mode)
    }
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

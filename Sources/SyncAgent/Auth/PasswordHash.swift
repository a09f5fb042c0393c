import Crypto
import FoundationEssentials
import Store

/// A salted password hash: PBKDF2 with HMAC-SHA256, as CouchDB's
/// `password_scheme = pbkdf2` (with SHA-256 and many more iterations).
public struct PasswordHash: Sendable, Hashable, Codable {
    /// Random salt, hex.
    var salt: String
    /// PBKDF2 iterations.
    var iterations: Int
    /// The derived key, hex.
    var derivedKey: String

    /// Iterations for new hashes: slow enough to make guessing expensive.
    public static let defaultIterations = 200_000

    enum CodingKeys: String, CodingKey {
        case salt, iterations
        case derivedKey = "derived_key"
    }

    /// A new hash of `password` with a fresh random salt.
    init(password: String, iterations: Int = PasswordHash.defaultIterations) {
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255) }
        self.salt = Hex.string(salt)
        self.iterations = iterations
        self.derivedKey = Hex.string(Self.pbkdf2(password: Array(password.utf8), salt: salt, iterations: iterations))
    }

    /// Whether `password` is the one hashed, compared in constant time.
    func matches(_ password: String) -> Bool {
        guard let salt = Hex.bytes(salt), let expected = Hex.bytes(derivedKey) else { return false }
        let actual = Self.pbkdf2(password: Array(password.utf8), salt: salt, iterations: iterations, length: expected.count)
        return zip(actual, expected).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0 && actual.count == expected.count
    }

    /// PBKDF2-HMAC-SHA256 (RFC 8018). The HMAC keyed once is copied for each round, so a
    /// round hashes two blocks (keying it anew hashed four) and makes no arrays.
    static func pbkdf2(password: [UInt8], salt: [UInt8], iterations: Int, length: Int = 32) -> [UInt8] {
        let keyed = HMAC<SHA256>(key: SymmetricKey(data: password))
        var output: [UInt8] = []
        var block: UInt32 = 1
        while output.count < length {
            var first = keyed
            first.update(data: salt)
            first.update(data: withUnsafeBytes(of: block.bigEndian, Array.init))
            var u = first.finalize()
            var t = Array(u)
            for _ in 1..<max(1, iterations) {
                var round = keyed
                u.withUnsafeBytes { round.update(data: $0) }
                u = round.finalize()
                u.withUnsafeBytes { bytes in
                    for index in 0..<t.count { t[index] ^= bytes[index] }
                }
            }
            output += t
            block += 1
        }
        return Array(output.prefix(length))
    }
}

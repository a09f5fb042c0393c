import Crypto
@testable import SyncAgent
import Testing

/// PBKDF2-HMAC-SHA256 as RFC 8018 defines it: stored hashes must keep verifying.
@Suite struct PasswordHashTests {
    @Test(arguments: [(1, 32), (2, 32), (1000, 32), (3, 64), (5, 20)])
    func derivedKeysAreRFC8018s(iterations: Int, length: Int) {
        let password = Array("pass\u{0}word é".utf8), salt = Array("saltSALTsalt".utf8)
        #expect(PasswordHash.pbkdf2(password: password, salt: salt, iterations: iterations, length: length)
                == definition(password: password, salt: salt, iterations: iterations, length: length))
    }

    @Test func aHashVerifiesItsPasswordOnly() {
        let hash = PasswordHash(password: "right", iterations: 10)
        #expect(hash.matches("right"))
        #expect(!hash.matches("wrong"))
    }

    /// RFC 8018, section 5.2, written out: T_i = U_1 xor ... xor U_c, U_1 = PRF(P, S || INT(i)), U_j = PRF(P, U_{j-1}).
    private func definition(password: [UInt8], salt: [UInt8], iterations: Int, length: Int) -> [UInt8] {
        let key = SymmetricKey(data: password)
        var output: [UInt8] = []
        var block: UInt32 = 1
        while output.count < length {
            var u = Array(HMAC<SHA256>.authenticationCode(for: salt + withUnsafeBytes(of: block.bigEndian, Array.init), using: key))
            var t = u
            for _ in 1..<iterations {
                u = Array(HMAC<SHA256>.authenticationCode(for: u, using: key))
                for index in 0..<t.count { t[index] ^= u[index] }
            }
            output += t
            block += 1
        }
        return Array(output.prefix(length))
    }
}

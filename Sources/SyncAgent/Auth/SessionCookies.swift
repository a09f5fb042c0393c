import Crypto
import FoundationEssentials

/// CouchDB's `AuthSession` cookies: `base64url(name:timestamp:mac)`, where
/// the MAC binds the name and the time to a per-process secret and to the
/// user's password salt (a new password ends old sessions).
struct SessionCookies: Sendable {
    /// Seconds a cookie stays valid.
    let timeout: Int
    /// Whether the listener serves HTTPS: its cookies are then `Secure`, never sent in clear.
    let secure: Bool
    private let secret = SymmetricKey(size: .bits256)

    init(timeout: Int, secure: Bool = false) {
        self.timeout = timeout
        self.secure = secure
    }

    /// A cookie value for `name`, made now.
    func make(name: String, salt: String, now: Date = Date()) -> String {
        let stamp = String(Int(now.timeIntervalSince1970), radix: 16, uppercase: true)
        let mac = self.mac(name: name, stamp: stamp, salt: salt)
        return Self.base64url(Array("\(name):\(stamp):".utf8) + mac)
    }

    /// The user name and the cookie's time when `value` is a valid, unexpired cookie.
    func verify(_ value: String, salt: (String) -> String?, now: Date = Date()) -> (name: String, issued: Date)? {
        // name:stamp:MAC, where the MAC is 32 raw bytes that may themselves hold ':'.
        let macCount = SHA256.byteCount
        guard let bytes = Self.unbase64url(value), bytes.count > macCount + 2,
              bytes[bytes.count - macCount - 1] == UInt8(ascii: ":")
        else { return nil }
        let second = bytes.count - macCount - 1
        guard let first = bytes[..<second].lastIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = String(decoding: bytes[..<first], as: UTF8.self)
        let stamp = String(decoding: bytes[(first + 1)..<second], as: UTF8.self)
        let given = Array(bytes[(second + 1)...])
        guard let seconds = Int(stamp, radix: 16), let salt = salt(name) else { return nil }
        let expected = mac(name: name, stamp: stamp, salt: salt)
        guard given.count == expected.count, zip(given, expected).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0 else { return nil }
        let issued = Date(timeIntervalSince1970: TimeInterval(seconds))
        guard now.timeIntervalSince(issued) < TimeInterval(timeout), issued.timeIntervalSince(now) < 60 else { return nil }
        return (name, issued)
    }

    /// The `Set-Cookie` header for a new session of `name`: `HttpOnly`, `SameSite=Lax` (CouchDB's
    /// `[chttpd_auth] same_site`), and `Secure` over HTTPS.
    func header(name: String, salt: String) -> String {
        "AuthSession=\(make(name: name, salt: salt)); Version=1; Path=/; Max-Age=\(timeout)" + attributes
    }

    /// The `Set-Cookie` header that ends a session.
    var clearingHeader: String { "AuthSession=; Version=1; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT" + attributes }

    private var attributes: String { "; HttpOnly; SameSite=Lax" + (secure ? "; Secure" : "") }

    private func mac(name: String, stamp: String, salt: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array("\(name):\(stamp):\(salt)".utf8), using: secret))
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_")
            .replacing("=", with: "")
    }

    static func unbase64url(_ text: String) -> [UInt8]? {
        var base64 = text.replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map { Array($0) }
    }
}

import Foundation
import Hummingbird

/// Who made a request, and how they proved it.
struct AuthenticatedUser: Sendable {
    /// The user name.
    let name: String
    /// `cookie` or `default` (HTTP Basic), as CouchDB's `_session` reports it.
    let method: String
    /// When a session cookie was issued.
    var issued: Date?
}

extension Listener {
    /// The user a request proves to be (Basic credentials or an `AuthSession`
    /// cookie), `nil` for an anonymous request. Wrong credentials are refused
    /// with 401, and so is an anonymous request when anonymous access is off,
    /// except for what a client needs to log in (`/_session`, `/_up`).
    func authenticate(_ request: Request, route: Route) throws(CouchError) -> AuthenticatedUser? {
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "basic" {
                guard let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
                      let text = String(data: decoded, encoding: .utf8),
                      let colon = text.firstIndex(of: ":")
                else { throw Self.unauthorized("Authorization header is malformed.") }
                let name = String(text[..<colon])
                let password = String(text[text.index(after: colon)...])
                guard users.verify(name: name, password: password) else {
                    throw Self.unauthorized("Name or password is incorrect.")
                }
                return AuthenticatedUser(name: name, method: "default")
            }
        }
        for cookie in request.headers[values: .cookie].flatMap({ $0.split(separator: ";") }) {
            let pair = cookie.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0] == "AuthSession", !pair[1].isEmpty else { continue }
            if let session = sessions.verify(String(pair[1]), salt: { users.salt(of: $0) }) {
                return AuthenticatedUser(name: session.name, method: "cookie", issued: session.issued)
            }
        }
        if configuration.requireAuthentication {
            switch route {
            case .server("_session"), .server("_up"): return nil
            default:
                var error = Self.unauthorized("Authentication required.")
                error.headers[.wwwAuthenticate] = "Basic realm=\"syncd\""
                throw error
            }
        }
        return nil
    }

    static func unauthorized(_ reason: String) -> CouchError {
        CouchError(.unauthorized, "unauthorized", reason)
    }
}

import FoundationEssentials
import Hummingbird
import Logging

extension Listener {
    /// Who a request proves to be: a user by Basic credentials or an
    /// `AuthSession` cookie, a paired peer by its TLS client certificate, a
    /// stranger by a certificate no peer has, else anonymous. Wrong credentials are refused with 401; an address
    /// that keeps failing is refused with 429 before its guess is checked. A user's
    /// connection is trusted from then on: strangers' connections cannot displace it.
    func authenticate(_ request: Request, context: ListenerContext) async throws(CouchError) -> Principal {
        // The control socket: a Unix socket only the owner (and its group) can open.
        if case .unixDomainSocket? = context.channel.localAddress { return .owner }
        let address = context.clientAddress
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "basic" {
                guard let decoded = Data(base64Encoded: String(parts[1]).trimmingWhitespace()),
                      let text = String(data: decoded, encoding: .utf8),
                      let colon = text.firstIndex(of: ":")
                else { throw Self.unauthorized("Authorization header is malformed.") }
                let name = String(text[..<colon])
                let record = try await checkPassword(name: name, password: String(text[text.index(after: colon)...]), from: address)
                connectionSlots.trust(context.channel)
                return .user(name: name, record: record, method: "default", issued: nil)
            }
        }
        for cookie in request.headers[values: .cookie].flatMap({ $0.split(separator: ";") }) {
            let pair = cookie.trimmingWhitespace().split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0] == "AuthSession", !pair[1].isEmpty else { continue }
            if let session = sessions.verify(String(pair[1]), salt: { node.users.salt(of: $0) }),
               let record = node.users.user(session.name) {
                connectionSlots.trust(context.channel)
                return .user(name: session.name, record: record, method: "cookie", issued: session.issued)
            }
        }
        if let client = await connections.client(of: context.channel) {
            guard let peer = node.peers.peer(id: client.id) else { return .stranger(client.id) }
            node.peers.seen(client.id, fromHost: address)
            if connections.markPeer(context.channel) { agent?.peerCalled(peer) }
            return .peer(peer)
        }
        return .anonymous
    }

    /// The user whose password `password` is; 401 if none, 429 when `address`
    /// failed too often, 503 when too many checks are waiting.
    func checkPassword(name: String, password: String, from address: String) async throws(CouchError) -> UserRecord {
        if let wait = passwordAttempts.wait(for: address) {
            throw CouchError.tooManyFailures("logins", wait: wait)
        }
        do {
            if let record = try await node.users.verify(name: name, password: password, from: address) { return record }
        } catch {
            // Counted as a failure: an address whose guesses are refused as busy is locked out like any guesser.
            passwordAttempts.failed(address)
            var busy = CouchError(.serviceUnavailable, "service_unavailable", "Too many logins are being checked; retry in 1 s.")
            busy.headers[.retryAfter] = "1"
            throw busy
        }
        passwordAttempts.failed(address)
        logger.warning("failed login from \(address)")
        throw Self.unauthorized("Name or password is incorrect.")
    }

    /// CouchDB's 401; `challenge` adds `WWW-Authenticate`, for a request that sent no credentials.
    static func unauthorized(_ reason: String, challenge: Bool = false) -> CouchError {
        var error = CouchError(.unauthorized, "unauthorized", reason)
        if challenge { error.headers[.wwwAuthenticate] = "Basic realm=\"syncd\"" }
        return error
    }
}

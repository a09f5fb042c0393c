import FoundationEssentials
import JSON
import Hummingbird
import Store

/// The node's control API under `/_syncd/`, for server admins (the control
/// socket's clients are the directory's owner): how `syncd user`, `peers` and
/// `pair` change a node that an agent runs. Each answer is what ``Node``'s
/// ``NodeControl`` gives, so a command prints the same with or without an agent.
///
/// - `GET /_syncd/users`; `PUT /_syncd/users/NAME` `{"password", "roles"?}`; `DELETE /_syncd/users/NAME`
/// - `GET /_syncd/peers`; `POST /_syncd/peers` `{"url", "port"?, "introduce"?}` joins an invitation; `DELETE /_syncd/peers/ID-OR-NAME`
/// - `POST /_syncd/invitations` `{"databases", "lifetime", "introduce"?}` (seconds); `GET /_syncd/invitations/HANDLE?wait=SECONDS`
///   answers when it is used, expires or is cancelled, or after at most 60 s; `DELETE /_syncd/invitations[/HANDLE]`
///
/// Failures are `{"error", "reason"}` with the reason the node gives.
extension CouchResponder {
    /// The longest an invitation wait is held open before answering `open` (the client asks again).
    static let longestInvitationWait = Duration.seconds(60)

    func nodeControl(_ path: String, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        let node = listener.node
        let parts = path.split(separator: "/", maxSplits: 1).map(String.init)
        do {
            switch (parts.first ?? "", parts.count > 1 ? parts[1] : nil, method) {
            case ("users", nil, .get):
                return try Self.encoded(["users": try await node.users()])
            case ("users", let name?, .put):
                let body = try await exchange.readObject(limit: Exchange.smallBodyLimit)
                let roles = body["roles"]?.arrayValue.map { $0.compactMap(\.stringValue) }
                return try Self.encoded(try await node.setUser(name, password: body["password"]?.stringValue ?? "", roles: roles))
            case ("users", let name?, .delete):
                guard try await node.removeUser(name) else { throw CouchError.notFound("no user \(name)") }
                return Self.json(["ok": true])
            case ("peers", nil, .get):
                return try Self.encoded(["peers": try await node.peers()])
            case ("peers", nil, .post):
                let body = try await exchange.readObject(limit: Exchange.smallBodyLimit)
                guard let url = body["url"]?.stringValue else { throw CouchError.badRequest("the invitation URL is missing") }
                let port = body["port"]?.intValue.flatMap { (1...65535).contains($0) ? $0 : nil }
                return try Self.encoded(try await node.join(url, port: port, introduce: body["introduce"]?.boolValue ?? true))
            case ("peers", let text?, .delete):
                return try Self.encoded(try await node.removePeer(text))
            case ("invitations", nil, .post):
                let body = try await exchange.readObject(limit: Exchange.smallBodyLimit)
                let databases = (body["databases"]?.arrayValue ?? []).compactMap(\.stringValue)
                guard let seconds = body["lifetime"]?.intValue, (1...7 * 86_400).contains(seconds) else {
                    throw CouchError.badRequest("lifetime must be a number of seconds up to a week")
                }
                return try Self.encoded(try await node.invite(databases: databases, lifetime: .seconds(seconds),
                                                              introduce: body["introduce"]?.boolValue ?? true))
            case ("invitations", let handle?, .get):
                let wait = try exchange.query.integer("wait").map { min(Duration.seconds(max(0, $0)), Self.longestInvitationWait) }
                let outcome = try await node.waitForInvitation(handle, atMost: wait ?? .zero)
                return Self.json(InvitationState(outcome).json)
            case ("invitations", let handle, .delete):
                return Self.json(["cancelled": .number(Double(try await node.cancelInvitations(handle: handle)))])
            case ("users", _, _), ("peers", _, _), ("invitations", _, _):
                throw CouchError.methodNotAllowed
            default:
                throw CouchError.notFound("missing")
            }
        } catch let error as NodeControlError {
            throw CouchError(error)
        }
    }

    /// A Codable value as JSON, dates in ISO 8601.
    static func encoded(_ value: some Encodable) throws -> Response {
        bytesResponse(Array(try AgentControl.encoder.encode(value)))
    }
}

extension CouchError {
    /// A node's refusal as an HTTP answer: its reason said as it is.
    init(_ error: NodeControlError) {
        switch error {
        case .noSuchPeer: self.init(.notFound, "not_found", error.description)
        case .ambiguousPeer: self.init(.conflict, "conflict", error.description)
        case .invalid: self.init(.badRequest, "bad_request", error.description)
        case .pairing: self.init(.badGateway, "pairing_failed", error.description)
        case .reported(let status, let kind, let reason): self.init(.init(code: status), kind, reason)
        }
    }
}

/// How an invitation stands, as `GET /_syncd/invitations/HANDLE` answers it.
struct InvitationState {
    let outcome: InvitationWatch.Outcome

    init(_ outcome: InvitationWatch.Outcome) { self.outcome = outcome }

    /// The state from its JSON; `nil` if it is not one.
    init?(json: JSON) {
        switch json["state"]?.stringValue {
        case "spent": self.init(.spent(json["spent_by"]?.stringValue ?? ""))
        case "expired": self.init(.expired)
        case "cancelled": self.init(.cancelled)
        case "open": self.init(.open)
        default: return nil
        }
    }

    var json: JSON {
        switch outcome {
        case .spent(let uuid): ["state": "spent", "spent_by": .string(uuid)]
        case .expired: ["state": "expired"]
        case .cancelled: ["state": "cancelled"]
        case .open: ["state": "open"]
        }
    }
}

import FoundationEssentials
import Hummingbird
import JSON
import Store

/// `GET/POST/DELETE /_session`: CouchDB's cookie authentication.
extension CouchResponder {
    func session(method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        switch method {
        case .get:
            var response = Self.json([
                "ok": true,
                "userCtx": ["name": exchange.principal.name.map { .string($0) } ?? .null,
                            "roles": .array(exchange.principal.roles.map { .string($0) })],
                "info": [
                    "authentication_handlers": ["cookie", "default", "syncd_peer_certificate"],
                    "authenticated": Self.method(of: exchange.principal),
                ],
            ])
            if case .user(let name, _, "cookie", let issued?) = exchange.principal,
               Date().timeIntervalSince(issued) > Double(configuration.sessionTimeout) / 2,
               let salt = listener.node.users.salt(of: name) {
                response.headers[.setCookie] = listener.sessions.header(name: name, salt: salt)
            }
            return response
        case .post:
            let (name, password) = try await credentials(&exchange)
            let record = try await listener.checkPassword(name: name, password: password, from: exchange.context.clientAddress)
            guard let salt = listener.node.users.salt(of: name) else { throw Listener.unauthorized("Name or password is incorrect.") }
            return Self.json(["ok": true, "name": .string(name), "roles": .array(record.roles.map { .string($0) })],
                             headers: [.setCookie: listener.sessions.header(name: name, salt: salt)])
        case .delete:
            return Self.json(["ok": true], headers: [.setCookie: listener.sessions.clearingHeader])
        default:
            throw CouchError.methodNotAllowed
        }
    }

    /// How the principal authenticated, as `_session` reports it.
    private static func method(of principal: Principal) -> JSON {
        switch principal {
        case .anonymous, .stranger: .null
        case .user(_, _, let method, _): .string(method)
        case .peer: "syncd_peer_certificate"
        case .owner: "syncd_control_socket"
        }
    }

    /// Name and password from a JSON or form-encoded body.
    private func credentials(_ exchange: inout Exchange) async throws -> (String, String) {
        if exchange.mediaType == "application/x-www-form-urlencoded" {
            let body = try await exchange.readBody(limit: Exchange.smallBodyLimit)
            let form = QueryParameters(String(decoding: body.readableBytesView, as: UTF8.self))
            guard let name = form["name"], let password = form["password"] else {
                throw CouchError.badRequest("name and password are required")
            }
            return (name, password)
        }
        let body = try await exchange.readObject(limit: Exchange.smallBodyLimit)
        guard let name = body["name"]?.stringValue, let password = body["password"]?.stringValue else {
            throw CouchError.badRequest("name and password are required")
        }
        return (name, password)
    }
}

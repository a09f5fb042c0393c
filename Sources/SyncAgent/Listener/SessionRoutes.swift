import Foundation
import Hummingbird
import Store

/// `GET/POST/DELETE /_session`: CouchDB's cookie authentication.
extension CouchResponder {
    func session(method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        switch method {
        case .get:
            var response = Self.json([
                "ok": true,
                "userCtx": ["name": exchange.user.map { .string($0.name) } ?? .null, "roles": roles(of: exchange.user)],
                "info": [
                    "authentication_handlers": ["cookie", "default"],
                    "authenticated": exchange.user.map { .string($0.method) } ?? .null,
                ],
            ])
            if let user = exchange.user, user.method == "cookie", let issued = user.issued,
               Date().timeIntervalSince(issued) > Double(configuration.sessionTimeout) / 2,
               let salt = listener.users.salt(of: user.name) {
                response.headers[.setCookie] = listener.sessions.header(name: user.name, salt: salt)
            }
            return response
        case .post:
            let (name, password) = try await credentials(&exchange)
            guard listener.users.verify(name: name, password: password), let salt = listener.users.salt(of: name) else {
                throw Listener.unauthorized("Name or password is incorrect.")
            }
            return Self.json(["ok": true, "name": .string(name), "roles": ["_admin"]],
                             headers: [.setCookie: listener.sessions.header(name: name, salt: salt)])
        case .delete:
            return Self.json(["ok": true], headers: [.setCookie: SessionCookies.clearingHeader])
        default:
            throw CouchError.methodNotAllowed
        }
    }

    private func roles(of user: AuthenticatedUser?) -> JSON {
        user != nil || !configuration.requireAuthentication ? ["_admin"] : []
    }

    /// Name and password from a JSON or form-encoded body.
    private func credentials(_ exchange: inout Exchange) async throws -> (String, String) {
        if exchange.mediaType == "application/x-www-form-urlencoded" {
            let body = try await exchange.readBody(limit: 64 << 10)
            let form = QueryParameters(String(decoding: body.readableBytesView, as: UTF8.self))
            guard let name = form["name"], let password = form["password"] else {
                throw CouchError.badRequest("name and password are required")
            }
            return (name, password)
        }
        let body = try await exchange.readObject(limit: 64 << 10)
        guard let name = body["name"]?.stringValue, let password = body["password"]?.stringValue else {
            throw CouchError.badRequest("name and password are required")
        }
        return (name, password)
    }
}

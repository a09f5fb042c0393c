import Foundation
import Hummingbird
import Store

/// `GET/PUT/DELETE /{db}/_local/{id}`: local documents, where replicators keep checkpoints.
///
/// A paired peer reaches only the local documents it wrote: each carries its
/// writer's node ID (fingerprint) under ``ownerKey``, and another's looks missing to it.
extension CouchResponder {
    /// The member naming the paired peer that wrote a local document.
    static let ownerKey = "syncd_peer"

    func local(_ id: String, in db: Database, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        if let peer = exchange.principal.peer, let existing = try? db.localDocument(id: id).json,
           existing[Self.ownerKey]?.stringValue != peer.id.fingerprint {
            throw CouchError.notFound("missing")
        }
        switch method {
        case .get:
            return Self.json(try db.localDocument(id: id).json)
        case .put:
            var object = try await exchange.readObject(limit: configuration.maximumRequestSize, checkingType: false)
            object["_id"] = nil
            if let peer = exchange.principal.peer { object[Self.ownerKey] = .string(peer.id.fingerprint) }
            if object["_rev"] == nil, let rev = exchange.query["rev"] { object["_rev"] = .string(rev) }
            let revision = try await db.putLocal(id: id, .object(object))
            return Self.json(["ok": true, "id": .string(id), "rev": .string(revision.description)], status: .created)
        case .delete:
            let given = exchange.query["rev"] ?? exchange.request.headers[.ifMatch]?.trimmingCharacters(in: .init(charactersIn: "\" "))
            var revision: RevisionID?
            if let given {
                guard given.hasPrefix("0-"), let count = Int(given.dropFirst(2)), count >= 0 else {
                    throw CouchError.badRequest("Invalid rev format")
                }
                revision = RevisionID(generation: 0, digest: String(count))
            }
            try await db.deleteLocal(id: id, revision: revision)
            return Self.json(["ok": true, "id": .string(id), "rev": "0-0"])
        default:
            throw CouchError.methodNotAllowed
        }
    }
}

import FoundationEssentials
import Hummingbird
import JSON
import Store

/// `GET/PUT/DELETE /{db}/_local/{id}`: local documents, where replicators keep checkpoints.
///
/// A paired peer reaches only the local documents it wrote: each carries its
/// writer's node ID (fingerprint) under ``ownerKey``, and another's looks missing to it
/// (checked again inside the write, so two peers writing at once cannot pass each other).
extension CouchResponder {
    /// The member naming the paired peer that wrote a local document.
    static let ownerKey = "syncd_peer"

    func local(_ id: String, in db: Database, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        let claim = exchange.principal.peer.map { LocalDocumentClaim(key: Self.ownerKey, value: $0.id.fingerprint) }
        if let claim, let existing = try? db.localDocument(id: id).json, existing[claim.key]?.stringValue != claim.value {
            throw CouchError.notFound("missing")
        }
        switch method {
        case .get:
            return Self.json(try db.localDocument(id: id).json)
        case .put:
            var object = try await exchange.readObject(limit: configuration.maximumRequestSize, checkingType: false)
            object["_id"] = nil
            if let claim { object[claim.key] = .string(claim.value) }
            if object["_rev"] == nil, let rev = exchange.query["rev"] { object["_rev"] = .string(rev) }
            let revision = try await db.putLocal(id: id, .object(object), claim: claim)
            return Self.json(["ok": true, "id": .string(id), "rev": .string(revision.description)], status: .created)
        case .delete:
            let given = exchange.query["rev"] ?? exchange.request.headers[.ifMatch]?.trimming { $0 == "\"" || $0 == " " }
            var revision: RevisionID?
            if let given {
                guard given.hasPrefix("0-"), let count = Int(given.dropFirst(2)), count >= 0 else {
                    throw CouchError.badRequest("Invalid rev format")
                }
                revision = RevisionID(generation: 0, digest: String(count))
            }
            try await db.deleteLocal(id: id, revision: revision, claim: claim)
            return Self.json(["ok": true, "id": .string(id), "rev": "0-0"])
        default:
            throw CouchError.methodNotAllowed
        }
    }
}

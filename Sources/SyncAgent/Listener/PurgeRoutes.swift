import Hummingbird
import JSON
import Store

/// `POST /{db}/_purge` and `/{db}/_purge_infos_limit`: removing revisions as
/// if they had never existed. Server administrators only, as in CouchDB (decided
/// with every other route in `Listener.authorize`).
extension CouchResponder {
    /// CouchDB's default `max_document_id_number` and `max_revisions_number` for `_purge`.
    static let purgeLimits = (documents: 100, revisions: 1000)

    /// `{"docid": ["rev", ...]}` answered 201 with `{"purge_seq": null, "purged": {"docid": [purged revs]}}`.
    func purge(_ db: Database, _ exchange: inout Exchange) async throws -> Response {
        let body = try await exchange.readObject(limit: configuration.maximumRequestSize)
        guard body.count <= Self.purgeLimits.documents else { throw CouchError.badRequest("Exceeded maximum number of documents.") }
        var request: [(id: String, revisions: [RevisionID])] = []
        var revisionCount = 0
        for (id, value) in body {
            let revisions = try QueryParameters.revisions(value, name: id)
            revisionCount += revisions.count
            request.append((id, revisions))
        }
        guard revisionCount <= Self.purgeLimits.revisions else { throw CouchError.badRequest("Exceeded maximum number of revisions.") }
        let purged = try await db.purge(request)
        let answer = purged.map { (key: $0.id, value: JSON.array($0.purged.map { .string($0.description) })) }
        return Self.json(["purge_seq": .null, "purged": .object(JSON.Object(answer))], status: .created)
    }

    /// `PUT /{db}/_purge_infos_limit` with a positive integer.
    func setPurgeInfosLimit(_ db: Database, _ exchange: inout Exchange) async throws -> Response {
        let body = try await exchange.readJSON(limit: configuration.maximumRequestSize)
        guard let limit = body.intValue, limit > 0 else { throw CouchError.badRequest("`purge_infos_limit` must be positive integer") }
        try await db.setPurgeInfosLimit(limit)
        return Self.json(["ok": true])
    }
}

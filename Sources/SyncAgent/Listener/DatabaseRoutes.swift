import FoundationEssentials
import Hummingbird
import JSON
import Store

/// `PUT/GET/HEAD/DELETE /{db}`, and `POST /{db}` (a new document).
extension CouchResponder {
    func database(_ name: String, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        switch method {
        case .put:
            try catalog.create(name)
            return Self.json(["ok": true], status: .created, headers: [.location: "/" + Self.pathSegment(name)])
        case .get:
            return Self.json(Self.info(try catalog.database(name).info()))
        case .delete:
            try catalog.delete(name)
            return Self.json(["ok": true])
        case .post:
            let db = try catalog.database(name)
            var object = try await exchange.readObject(limit: configuration.maximumRequestSize)
            if object["_id"] == nil {
                object["_id"] = .string(Database.newDocumentID())
            }
            try listener.checkWrite(ids: [object["_id"]?.stringValue ?? ""], by: exchange.principal, in: name)
            return try await writeDocument(.object(object), in: db, exchange: exchange)
        default:
            throw CouchError.methodNotAllowed
        }
    }

    /// Database info as CouchDB's `GET /{db}` answers it, plus the database's `uuid`.
    /// `GET`/`PUT /{db}/_security`: who may read and change the database.
    func security(_ db: Database, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        guard method == .put else { return Self.json(try db.security() ?? SecurityObject.adminOnly) }
        let security = JSON.object(try await exchange.readObject(limit: 1 << 20))
        try SecurityObject.validate(security)
        try await db.setSecurity(security)
        return Self.json(["ok": true])
    }

    /// `GET`/`PUT /{db}/_revs_limit`: how many revisions of history each document keeps.
    func revsLimit(_ db: Database, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        guard method == .put else { return Self.json(.number(Double(try db.revsLimit()))) }
        let body = try await exchange.readJSON(limit: configuration.maximumRequestSize)
        guard let limit = body.intValue, limit > 0 else { throw CouchError.badRequest("revs_limit must be a positive integer") }
        try await db.setRevsLimit(limit)
        return Self.json(["ok": true])
    }

    static func info(_ info: DatabaseInfo) -> JSON {
        [
            "db_name": .string(info.name),
            "uuid": .string(info.uuid),
            "doc_count": .number(Double(info.docCount)),
            "doc_del_count": .number(Double(info.deletedDocCount)),
            "update_seq": .number(Double(info.updateSequence)),
            "purge_seq": .number(Double(info.purgeSequence)),
            "compact_running": false,
            "disk_size": .number(Double(info.fileSize)),
            "data_size": .number(Double(info.activeSize)),
            "sizes": [
                "file": .number(Double(info.fileSize)),
                "active": .number(Double(info.activeSize)),
                "external": .number(Double(info.activeSize)),
            ],
            "instance_start_time": .string(String(info.instanceStartTime)),
            "disk_format_version": 8,
            "committed_update_seq": .number(Double(info.updateSequence)),
            "props": [:],
        ]
    }

    /// A name or id made safe as one URL path segment: what a path allows but `/`, `?`, `#`
    /// and `;` (which some servers take for the start of path parameters), as Foundation did.
    static func pathSegment(_ text: String) -> String {
        PathEncoding.encode(text) { PathEncoding.isUnreserved($0) || "!$&'()*+,=:@".utf8.contains($0) }
    }
}

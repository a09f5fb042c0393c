import FoundationEssentials
import Hummingbird
import JSON
import NIOCore
import NIOPosix
import Store

/// `GET/PUT/DELETE /{db}/{docid}`: one document, a revision of it, or its
/// open revisions (`open_revs`), as JSON or multipart.
extension CouchResponder {
    func document(_ id: String, in db: Database, method: HTTPRequest.Method, _ exchange: inout Exchange) async throws -> Response {
        switch method {
        case .get: return try getDocument(id, in: db, exchange)
        case .put: return try await putDocument(id, in: db, &exchange)
        case .delete:
            try exchange.principal.checkMayEdit()
            guard let revision = try exchange.revisionFromQueryOrHeader() else { throw StoreError.conflict }
            let deleted = try await db.delete(id: id, revision: revision, author: exchange.principal.author)
            return Self.json(["ok": true, "id": .string(id), "rev": .string(deleted.description)],
                             headers: [.eTag: "\"\(deleted)\""])
        default: throw CouchError.methodNotAllowed
        }
    }

    private func getDocument(_ id: String, in db: Database, _ exchange: Exchange) throws -> Response {
        let query = exchange.query
        let options = try DocumentReadOptions(query)
        if let openRevs = query["open_revs"] {
            let requested = openRevs == "all" ? nil : try query.revisions("open_revs")
            let answers = try db.openRevisions(id: id, revisions: requested, latest: try query.bool("latest"))
            if exchange.accepts("multipart/mixed") {
                // As CouchDB: a multipart answer carries the attachments the requester
                // cannot have (all, or those after `atts_since`), whatever `attachments` says.
                var multipart = options
                multipart.attachments = true
                return openRevisionsMultipart(answers, in: db, options: multipart)
            }
            // Streamed an answer at a time: a document's leaves are bounded, their answer need not be held whole.
            return Self.streamingJSON { writer in
                var output: [UInt8] = [UInt8(ascii: "[")]
                for (index, answer) in answers.enumerated() {
                    if index > 0 { output.append(UInt8(ascii: ",")) }
                    switch answer {
                    case .found(let document):
                        let rendered = try await NIOThreadPool.singleton.runIfActive { try options.render(document, in: db) }
                        JSON.object(["ok": rendered]).write(to: &output)
                    case .missing(let revision):
                        JSON.object(["missing": .string(revision.description)]).write(to: &output)
                    }
                    if output.count >= Self.flushSize {
                        try await writer.write(ByteBuffer(bytes: output))
                        output.removeAll(keepingCapacity: true)
                    }
                }
                output += Array("]\n".utf8)
                try await writer.write(ByteBuffer(bytes: output))
            }
        }
        let document = try db.document(id: id, revision: try query.revision("rev"))
        let etag = "\"\(document.revision)\""
        if exchange.request.headers[.ifNoneMatch] == etag {
            return Response(status: .notModified, headers: [.eTag: etag])
        }
        if exchange.accepts("multipart/related"), !options.included(in: document).isEmpty {
            let (contentType, segments) = try options.related(document, in: db)
            return Self.streaming(segments, contentType: contentType, headers: [.eTag: etag])
        }
        return Self.json(try options.render(document, in: db), headers: [.eTag: etag])
    }

    /// `open_revs` as CouchDB's `multipart/mixed`: one part per revision, a
    /// `multipart/related` part when the revision's attachments follow. Sent
    /// chunked, a part at a time, as CouchDB does.
    private func openRevisionsMultipart(_ answers: [OpenRevision], in db: Database, options: DocumentReadOptions) -> Response {
        let boundary = MultipartWriter.randomBoundary()
        let contentType = MultipartWriter(boundary: boundary).contentType("mixed")
        return Response(status: .ok, headers: [.contentType: contentType], body: ResponseBody { writer in
            var multipart = MultipartWriter(boundary: boundary)
            for answer in answers {
                switch answer {
                case .missing(let revision):
                    multipart.startPart([("Content-Type", "application/json; error=\"true\"")])
                    multipart.append(.bytes(JSON.object(["missing": .string(revision.description)]).serializedBytes()))
                case .found(let document):
                    if options.included(in: document).isEmpty {
                        multipart.startPart([("Content-Type", "application/json")])
                        multipart.append(.bytes(try options.render(document, in: db).serializedBytes()))
                    } else {
                        let (contentType, segments) = try options.related(document, in: db)
                        multipart.startPart([("Content-Type", contentType)])
                        multipart.append(contentsOf: segments)
                    }
                }
                try await MultipartSegment.write(multipart.takeSegments()) { try await writer.write($0) }
            }
            try await MultipartSegment.write(multipart.finish()) { try await writer.write($0) }
            try await writer.finish(nil)
        })
    }

    private func putDocument(_ id: String, in db: Database, _ exchange: inout Exchange) async throws -> Response {
        var object: JSON.Object
        var staged: [String: StagedAttachment] = [:]
        defer { for content in staged.values { db.discardStaged(content) } }
        if exchange.mediaType == "multipart/related" {
            (object, staged) = try await readRelated(in: db, &exchange)
        } else {
            object = try await exchange.readObject(limit: configuration.maximumRequestSize, checkingType: false)
        }
        object["_id"] = .string(id)
        if object["_rev"] == nil, let revision = try exchange.revisionFromQueryOrHeader() {
            object["_rev"] = .string(revision.description)
        }
        return try await writeDocument(.object(object), staged: staged, in: db, exchange: exchange)
    }

    /// Reads a `multipart/related` document upload: the JSON part, then each
    /// `"follows": true` attachment streamed to a staged file.
    private func readRelated(in db: Database, _ exchange: inout Exchange) async throws -> (JSON.Object, [String: StagedAttachment]) {
        guard let boundary = exchange.request.headers[.contentType].flatMap({ MediaType(parsing: $0).boundary }) else {
            throw CouchError.badRequest("multipart/related needs a boundary")
        }
        // The document and as many attachments as one may have.
        let reader = MultipartReader(boundary: boundary, body: exchange.request.body, maximumParts: Database.maximumAttachments + 1)
        guard try await reader.nextPart() != nil else { throw CouchError.badRequest("multipart body has no document part") }
        let document = try await reader.readBody(limit: configuration.maximumRequestSize)  // 413 beyond the limit
        let parsed: JSON
        do { parsed = try JSON(parsing: document) } catch { throw CouchError.invalidJSON(error) }
        guard case .object(let object) = parsed else { throw CouchError.invalidJSON() }
        let follows = (object["_attachments"]?.objectValue ?? [:]).compactMap { entry in
            entry.value["follows"]?.boolValue == true ? entry.key : nil
        }
        // An encoded part is checked by decoding it: its declared length is bounded as its bytes are.
        for (name, entry) in object["_attachments"]?.objectValue ?? [:] where entry["encoding"] != nil {
            if let length = entry["length"]?.doubleValue, length > Double(configuration.maximumAttachmentSize) {
                throw StoreError.attachmentTooLarge(name: name)
            }
        }
        var staged: [String: StagedAttachment] = [:]
        do {
            var index = 0
            while let headers = try await reader.nextPart() {
                // Each attachment that follows comes once: a part for anything else is refused, so
                // the parts are bounded by the document (and no staged file is overwritten unseen).
                guard let name = headers.filename ?? (index < follows.count ? follows[index] : nil),
                      follows.contains(name), staged[name] == nil else {
                    throw CouchError.badRequest("multipart part \(index + 2) matches no attachment that follows")
                }
                staged[name] = try await Self.stage(reader.bodyChunks(), named: name, in: db,
                                                    limit: configuration.maximumAttachmentSize)
                index += 1
            }
        } catch {
            for content in staged.values { db.discardStaged(content) }
            throw error
        }
        return (object, staged)
    }

    /// Writes one document (new edit, or `new_edits=false`) and answers 201, or 202 with `batch=ok`.
    func writeDocument(_ json: JSON, staged: [String: StagedAttachment] = [:], in db: Database, exchange: Exchange) async throws -> Response {
        let newEdits = try exchange.query.bool("new_edits", default: true)
        if newEdits { try exchange.principal.checkMayEdit() }
        let result = try await db.put(json, newEdits: newEdits, staged: staged, author: exchange.principal.author)
        let revision = try result.result.get()
        let batch = exchange.query["batch"] == "ok"
        return Self.json(
            ["ok": true, "id": .string(result.id), "rev": .string(revision.description)],
            status: batch ? .accepted : .created,
            headers: [.eTag: "\"\(revision)\"", .location: "/\(Self.pathSegment(db.name))/\(Self.pathSegment(result.id))"]
        )
    }

    /// A body streamed from multipart segments, with its length known up front.
    static func streaming(_ segments: [MultipartSegment], contentType: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = contentType
        let length = MultipartSegment.length(of: segments)
        fields[.contentLength] = String(length)
        return Response(status: .ok, headers: fields, body: ResponseBody(contentLength: length) { writer in
            try await MultipartSegment.write(segments) { try await writer.write($0) }
            try await writer.finish(nil)
        })
    }
}

extension Exchange {
    /// The revision named by `?rev=` or, failing that, an `If-Match` header.
    func revisionFromQueryOrHeader() throws(CouchError) -> RevisionID? {
        if let revision = try query.revision("rev") { return revision }
        guard let header = request.headers[.ifMatch] else { return nil }
        let text = header.trimming { $0 == "\"" || $0 == " " }
        guard let revision = RevisionID(text) else { throw .badRequest("Invalid rev format") }
        return revision
    }
}

/// How to render a document for a read: which special fields, and which
/// attachments carry their content (`attachments`, `atts_since`).
struct DocumentReadOptions {
    var fields: DocumentRevision.Fields = []
    var attachments = false
    var attachmentsSince: [RevisionID]?

    init(_ query: QueryParameters) throws(CouchError) {
        if try query.bool("revs") { fields.insert(.revisions) }
        if try query.bool("revs_info") { fields.insert(.revsInfo) }
        if try query.bool("conflicts") { fields.insert(.conflicts) }
        if try query.bool("deleted_conflicts") { fields.insert(.deletedConflicts) }
        if try query.bool("local_seq") { fields.insert(.localSequence) }
        if try query.bool("meta") { fields.formUnion([.conflicts, .deletedConflicts, .revsInfo]) }
        if try query.bool("att_encoding_info") { fields.insert(.encodingInfo) }
        attachments = try query.bool("attachments")
        attachmentsSince = try query.revisions("atts_since")
    }

    init(fields: DocumentRevision.Fields, attachments: Bool, attachmentsSince: [RevisionID]?) {
        self.fields = fields
        self.attachments = attachments
        self.attachmentsSince = attachmentsSince
    }

    /// The names of the attachments whose content goes with `document`.
    /// With `atts_since`, only those changed after the newest of those
    /// revisions that is an ancestor of the document's revision.
    func included(in document: DocumentRevision) -> Set<String> {
        guard attachments || attachmentsSince != nil else { return [] }
        var since = 0
        if let attachmentsSince {
            let history = Set(document.history)
            since = attachmentsSince.filter { history.contains($0) }.map(\.generation).max() ?? 0
        }
        return Set(document.attachments.filter { $0.revpos > since }.map(\.name))
    }

    /// The document as JSON, included attachments inline as base64.
    func render(_ document: DocumentRevision, in db: Database) throws(StoreError) -> JSON {
        let included = included(in: document)
        var contents: [String: [UInt8]] = [:]
        for attachment in document.attachments where included.contains(attachment.name) {
            contents[attachment.name] = try db.attachmentContent(attachment)
        }
        return document.json(fields) { attachment in contents[attachment.name].map { .data($0) } ?? .stub }
    }

    /// The document as `multipart/related`, included attachments following the
    /// JSON as CouchDB sends them: as stored (gzip-encoded ones encoded), with
    /// `encoding` and `encoded_length` in the JSON.
    func related(_ document: DocumentRevision, in db: Database) throws(StoreError) -> (contentType: String, segments: [MultipartSegment]) {
        let included = included(in: document)
        let json = document.json(fields.union(.encodingInfo)) { included.contains($0.name) ? .follows : .stub }
        let parts = document.attachments.filter { included.contains($0.name) }.map { attachment in
            (name: attachment.name, contentType: attachment.contentType, path: db.attachmentPath(attachment),
             length: attachment.storedLength, encoding: attachment.encoding?.name)
        }
        return MultipartWriter.related(document: json.serializedBytes(), attachments: parts)
    }
}

import Hummingbird
import JSON
import NIOCore
import NIOPosix
import Store

/// `_bulk_docs`, `_bulk_get` and `_revs_diff`: the batch endpoints replication runs on.
extension CouchResponder {
    /// `POST /{db}/_bulk_docs`: `{"docs": [...], "new_edits": bool}`. With
    /// `new_edits=false` CouchDB lists only the documents that failed.
    func bulkDocs(_ db: Database, _ exchange: inout Exchange) async throws -> Response {
        let body = try await exchange.readObject(limit: configuration.maximumRequestSize)
        guard case .array(let docs)? = body["docs"] else { throw CouchError.badRequest("POST body must include `docs` parameter.") }
        var newEdits = true
        if let value = body["new_edits"] {
            guard let flag = value.boolValue else { throw CouchError.badRequest("`new_edits` parameter must be a boolean.") }
            newEdits = flag
        }
        if newEdits { try exchange.principal.checkMayEdit() }
        try listener.checkWrite(ids: docs.compactMap { $0["_id"]?.stringValue }, by: exchange.principal, in: db.name)
        try Self.refuseOversizedDocument(docs, in: db, requestSize: exchange.request.headers[.contentLength].flatMap(Int.init))
        let results = try await db.bulkDocs(docs.map { DocumentUpload($0) }, newEdits: newEdits, author: exchange.principal.author)
        var answer: [JSON] = []
        answer.reserveCapacity(results.count)
        for (result, doc) in zip(results, docs) {
            switch result.result {
            case .success(let revision):
                if newEdits { answer.append(["ok": true, "id": .string(result.id), "rev": .string(revision.description)]) }
            case .failure(let error):
                var entry: JSON.Object = ["id": .string(result.id)]
                // As CouchDB: a replicated revision's failure names the revision.
                if !newEdits, let revision = doc["_rev"], case .string = revision { entry["rev"] = revision }
                entry["error"] = .string(error.error)
                entry["reason"] = .string(error.reason)
                answer.append(.object(entry))
            }
        }
        return Self.json(.array(answer), status: .created)
    }

    /// As CouchDB 3.5: a document whose body (without `_id`, `_attachments` and the other
    /// special members) is over `max_document_size` fails the whole `_bulk_docs` with 413
    /// `document_too_large`, before anything is written. Only a request larger than the
    /// bound (or of unknown length) can hold such a document, so the others cost nothing here.
    static func refuseOversizedDocument(_ docs: [JSON], in db: Database, requestSize: Int?) throws {
        guard (requestSize ?? .max) > db.maximumDocumentSize else { return }
        for case .object(let fields) in docs {
            let body = JSON.object(JSON.Object(fields.filter { !$0.key.hasPrefix("_") }))
            if body.serializedBytes().count > db.maximumDocumentSize {
                throw StoreError.documentTooLarge(id: fields["_id"]?.stringValue ?? "")
            }
        }
    }

    /// `POST /{db}/_bulk_get`: `{"docs": [{"id", "rev"?, "atts_since"?}]}`
    /// answered as `{"results": [{"id", "docs": [{"ok": doc} | {"error": {...}}]}]}`.
    ///
    /// The answer is streamed in parts of about 64 KiB, each read (revisions and
    /// attachment files) and rendered on NIO's thread pool in one go, so what is held
    /// is bounded by the part and the largest document, not by the request, no read
    /// blocks the cooperative pool, and a batch of small documents costs a few thread
    /// hops, not one per document.
    func bulkGet(_ db: Database, _ exchange: inout Exchange) async throws -> Response {
        let body = try await exchange.readObject(limit: configuration.maximumRequestSize)
        guard case .array(let requests)? = body["docs"] else { throw CouchError.badRequest("Missing JSON list of 'docs'.") }
        let query = exchange.query
        for name in ["open_revs", "new_edits", "w", "rev", "atts_since"] where query.has(name) {
            throw CouchError.badRequest("\"\(name)\" query parameter is not acceptable")
        }
        let base = try DocumentReadOptions(query)
        let latest = try query.bool("latest")
        // Every request is checked before the answer starts, so a bad one still gets its 400.
        var reads: [BulkGetRead] = []
        reads.reserveCapacity(requests.count)
        for request in requests {
            var options = base
            // As CouchDB: a non-empty `atts_since` brings the attachments changed
            // since; an empty one is no request for attachments at all.
            if let since = request["atts_since"] {
                let revisions = try QueryParameters.revisions(since, name: "atts_since")
                if !revisions.isEmpty { options.attachmentsSince = revisions }
            }
            reads.append(BulkGetRead(request: request, options: options))
        }
        if exchange.prefersMultipart {
            return bulkGetMultipart(reads, in: db, latest: latest)
        }
        return Self.streamingJSON { [reads] writer in
            try await writer.write(ByteBuffer(string: #"{"results":["#))
            var next = 0
            while next < reads.count {
                let start = next
                let (part, end) = try await NIOThreadPool.singleton.runIfActive { () -> ([UInt8], Int) in
                    var output: [UInt8] = []
                    var index = start
                    while index < reads.count && output.count < Self.flushSize {
                        if index > 0 { output.append(UInt8(ascii: ",")) }
                        output += reads[index].answer(in: db, latest: latest)
                        index += 1
                    }
                    return (output, index)
                }
                next = end
                try await writer.write(ByteBuffer(bytes: part))
            }
            try await writer.write(ByteBuffer(string: "]}\n"))
        }
    }

    /// `_bulk_get` as CouchDB answers a client that accepts `multipart/mixed` and not
    /// JSON: a part per revision, `application/json` for a document without attachments,
    /// `multipart/related` (`X-Doc-Id`, `X-Rev-Id`) with the attachments the requester
    /// lacks following as their stored bytes, `application/json; error="true"` for a
    /// revision that cannot be read. Rendered on NIO's thread pool a few parts at a
    /// time; attachment files are read only as the answer is sent.
    private func bulkGetMultipart(_ reads: [BulkGetRead], in db: Database, latest: Bool) -> Response {
        let boundary = MultipartWriter.randomBoundary()
        let contentType = MultipartWriter(boundary: boundary).contentType("mixed")
        return Response(status: .ok, headers: [.contentType: contentType], body: ResponseBody { writer in
            var multipart = MultipartWriter(boundary: boundary)
            var next = 0
            while next < reads.count {
                let start = next
                let rendering = multipart
                (multipart, next) = try await NIOThreadPool.singleton.runIfActive { () -> (MultipartWriter, Int) in
                    var rendered = rendering
                    var index = start
                    while index < reads.count && MultipartSegment.length(of: rendered.segments) < Self.flushSize {
                        reads[index].parts(in: db, latest: latest, into: &rendered)
                        index += 1
                    }
                    return (rendered, index)
                }
                try await MultipartSegment.write(multipart.takeSegments()) { try await writer.write($0) }
            }
            try await MultipartSegment.write(multipart.finish()) { try await writer.write($0) }
            try await writer.finish(nil)
        })
    }

    /// `POST /{db}/_revs_diff`: `{id: [revs]}` answered with the missing
    /// revisions and the leaves that may be their ancestors.
    func revsDiff(_ db: Database, _ exchange: inout Exchange) async throws -> Response {
        let body = try await exchange.readObject(limit: configuration.maximumRequestSize)
        var request: [(id: String, revisions: [RevisionID])] = []
        request.reserveCapacity(body.count)
        for (id, value) in body {
            request.append((id, try QueryParameters.revisions(value, name: id)))
        }
        var output: [UInt8] = [UInt8(ascii: "{")]
        for (index, difference) in try db.revsDiff(request).enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSON.writeString(difference.id, to: &output)
            output.append(UInt8(ascii: ":"))
            var entry: JSON.Object = ["missing": .array(difference.missing.map { .string($0.description) })]
            if !difference.possibleAncestors.isEmpty {
                entry["possible_ancestors"] = .array(difference.possibleAncestors.map { .string($0.description) })
            }
            JSON.object(entry).write(to: &output)
        }
        output.append(contentsOf: Array("}\n".utf8))
        return Self.bytesResponse(output)
    }
}

/// One request of a `_bulk_get` and how to render what it names.
private struct BulkGetRead: Sendable {
    let request: JSON
    let options: DocumentReadOptions

    /// The parts of the multipart answer: one per revision read, or an error part.
    func parts(in db: Database, latest: Bool, into writer: inout MultipartWriter) {
        func errorPart(_ fields: JSON.Object) {
            writer.startPart([("Content-Type", "application/json; error=\"true\"")])
            writer.append(.bytes(JSON.object(fields).serializedBytes()))
        }
        guard let id = request["id"]?.stringValue else {
            return errorPart(["id": request["id"] ?? .null, "rev": request["rev"] ?? .null,
                          "error": "bad_request", "reason": "document id missed"])
        }
        var multipart = options
        multipart.attachments = true
        let answers: [OpenRevision]
        do {
            if let text = request["rev"]?.stringValue {
                guard let revision = RevisionID(text) else {
                    return errorPart(["id": .string(id), "rev": .string(text), "error": "bad_request", "reason": "Invalid rev format"])
                }
                answers = try db.openRevisions(id: id, revisions: [revision], latest: latest)
            } else {
                answers = [.found(try db.document(id: id))]
            }
        } catch {
            return errorPart(["id": .string(id), "rev": request["rev"] ?? "undefined",
                          "error": .string(error.error), "reason": .string(error.reason)])
        }
        for answer in answers {
            switch answer {
            case .missing(let revision):
                // As CouchDB: this part names the revision only.
                errorPart(["rev": .string(revision.description), "error": "not_found", "reason": "missing"])
            case .found(let document) where document.attachments.isEmpty:
                writer.startPart([("Content-Type", "application/json")])
                writer.append(.bytes(document.json(options.fields).serializedBytes()))
            case .found(let document):
                do {
                    let (contentType, segments) = try multipart.related(document, in: db)
                    writer.startPart([("X-Doc-Id", id), ("X-Rev-Id", document.revision.description), ("Content-Type", contentType)])
                    writer.append(contentsOf: segments)
                } catch {
                    errorPart(["id": .string(id), "rev": .string(document.revision.description),
                           "error": .string(error.error), "reason": .string(error.reason)])
                }
            }
        }
    }

    /// The serialized `{"id", "docs": [...]}` result.
    func answer(in db: Database, latest: Bool) -> [UInt8] {
        var output: [UInt8] = []
        guard let id = request["id"]?.stringValue else {
            JSON.object(["id": request["id"] ?? .null, "docs": [["error": [
                "id": request["id"] ?? .null, "rev": request["rev"] ?? .null,
                "error": "bad_request", "reason": "document id missed"]]]]).write(to: &output)
            return output
        }
        var docs: [JSON] = []
        func failure(_ rev: String, _ error: StoreError) -> JSON {
            ["error": ["id": .string(id), "rev": .string(rev), "error": .string(error.error), "reason": .string(error.reason)]]
        }
        if let text = request["rev"]?.stringValue {
            if let revision = RevisionID(text) {
                do {
                    for answer in try db.openRevisions(id: id, revisions: [revision], latest: latest) {
                        switch answer {
                        case .found(let document): docs.append(["ok": try options.render(document, in: db)])
                        case .missing(let revision): docs.append(failure(revision.description, .notFound("missing")))
                        }
                    }
                } catch {
                    docs.append(failure(text, error))
                }
            } else {
                docs.append(failure(text, .badRequest("Invalid rev format")))
            }
        } else {
            do {
                docs.append(["ok": try options.render(try db.document(id: id), in: db)])
            } catch {
                docs.append(failure("undefined", error))
            }
        }
        JSON.object(["id": .string(id), "docs": .array(docs)]).write(to: &output)
        return output
    }
}

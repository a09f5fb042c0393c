import Crypto
import Foundation
import JSON
import NIOCore
import Store

extension RemoteEndpoint {
    /// `POST _revs_diff`.
    public func missingRevisions(_ revisions: [DocumentRevisions]) async throws(EndpointError) -> [MissingRevisions] {
        guard !revisions.isEmpty else { return [] }
        var body: [UInt8] = [UInt8(ascii: "{")]
        for (offset, entry) in revisions.enumerated() {
            if offset > 0 { body.append(UInt8(ascii: ",")) }
            JSON.writeString(entry.id, to: &body)
            body.append(UInt8(ascii: ":"))
            JSON.array(entry.revisions.map { .string($0.description) }).write(to: &body)
        }
        body.append(UInt8(ascii: "}"))
        let answer = try await requestJSON(.POST, databasePath + "/_revs_diff", body: body)
        guard case .object(let documents) = answer else { throw .badResponse(displayName, "_revs_diff answered no object") }
        return documents.map { id, entry in
            MissingRevisions(id: id, missing: revisionList(entry["missing"]), possibleAncestors: revisionList(entry["possible_ancestors"]))
        }
    }

    /// `POST _bulk_get?revs=true&latest=true&attachments=true` with `atts_since`,
    /// or one `GET doc?open_revs=...` per document, answered as `multipart/mixed`,
    /// where the server lacks `_bulk_get`. Each revision goes to `deliver` as soon as
    /// its part of the answer is read: the answer is never held whole.
    public func revisions(_ requests: [MissingRevisions], deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
        guard !requests.isEmpty else { return }
        if bulkGetSupported.withLock({ $0 }) != false {
            if try await bulkGet(requests, deliver: deliver) {
                bulkGetSupported.withLock { $0 = true }
                return
            }
            bulkGetSupported.withLock { $0 = false }
        }
        try await openRevisions(requests, deliver: deliver)
    }

    /// Reads the `_bulk_get` answer one result at a time; `false` when the server does not have `_bulk_get`.
    private func bulkGet(_ requests: [MissingRevisions], deliver: (FetchedRevision) async -> Void) async throws(EndpointError) -> Bool {
        var docs: [JSON] = []
        for request in requests {
            let since = JSON.array(request.possibleAncestors.map { .string($0.description) })
            for revision in request.missing {
                var entry: JSON.Object = ["id": .string(request.id), "rev": .string(revision.description)]
                if !request.possibleAncestors.isEmpty { entry["atts_since"] = since }
                docs.append(.object(entry))
            }
        }
        let query = [("revs", "true"), ("latest", "true"), ("attachments", "true")]
        let path = databasePath + "/_bulk_get"
        let response = try await send(.POST, path, query: query, body: JSON.object(["docs": .array(docs)]).serializedBytes(),
                                      accept: "application/json", timeout: configuration.requestTimeout)
        // Whether the server has `_bulk_get` is decided by the status, before the body is read as a stream.
        guard response.status.code < 400 else {
            let failure = await error(answering: response)
            if [404, 405, 501].contains(failure.status) || (failure.status == 400 && failure.error == "illegal_docid") { return false }
            throw failure
        }
        // Only what was asked for: a server adding documents (or `_local/` ones) is refused.
        let asked = Set(requests.map(\.id))
        var splitter = ResultsSplitter(limit: ReplicatorTuning.largestRevisionsAnswer)
        var results = 0
        var answered = Set<String>()
        do {
            for try await chunk in response.body {
                for element in try splitter.elements(in: chunk.readableBytesView) {
                    results += 1
                    // CouchDB answers one result for each revision asked.
                    guard results <= docs.count else {
                        throw EndpointError.badResponse(displayName, "_bulk_get answered more results than the \(docs.count) asked for")
                    }
                    let result: JSON
                    do { result = try JSON(parsing: element) } catch {
                        throw EndpointError.badResponse(displayName, "a _bulk_get result is not JSON: \(error)")
                    }
                    guard let id = result["id"]?.stringValue, asked.contains(id), !id.hasPrefix("_local/") else {
                        throw EndpointError.badResponse(displayName, "_bulk_get answered for a document not asked for")
                    }
                    answered.insert(id)
                    for answer in result["docs"]?.arrayValue ?? [] {
                        await deliver(revision(from: answer, id: id))
                    }
                }
            }
            try splitter.finish()
        } catch let error as EndpointError {
            throw error
        } catch let error as ResultsSplitter.FramingError {
            throw .badResponse(displayName, "malformed _bulk_get answer: \(error)")
        } catch {
            throw .unreachable(displayName, "reading the answer to POST \(path) failed: \(ConnectionFailure.plain(error))")
        }
        // A document the answer left out is neither written nor refused: it must not be passed over.
        for request in requests where !answered.contains(request.id) {
            for revision in request.missing {
                await deliver(.failed(id: request.id, revision: revision, reason: "the _bulk_get answer left it out"))
            }
        }
        return true
    }

    /// One `GET doc?open_revs=[...]` per document, a few at a time, each document's
    /// revisions delivered once its answer is read.
    private func openRevisions(_ requests: [MissingRevisions], deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
        let failure = await withTaskGroup(of: Result<[FetchedRevision], EndpointError>.self) { group -> EndpointError? in
            var next = 0
            var failure: EndpointError?
            func add() {
                let request = requests[next]
                next += 1
                group.addTask { await self.openRevisions(of: request) }
            }
            while next < min(ReplicatorTuning.openRevisionsAtOnce, requests.count) { add() }
            for await outcome in group {
                switch outcome {
                case .success(let fetched):
                    for revision in fetched { await deliver(revision) }
                case .failure(let error):
                    failure = failure ?? error
                }
                if next < requests.count && failure == nil { add() }
            }
            return failure
        }
        if let failure { throw failure }
    }

    private func openRevisions(of request: MissingRevisions) async -> Result<[FetchedRevision], EndpointError> {
        var query = [("revs", "true"), ("latest", "true"), ("attachments", "true"),
                     ("open_revs", JSON.array(request.missing.map { .string($0.description) }).serialized())]
        if !request.possibleAncestors.isEmpty {
            query.append(("atts_since", JSON.array(request.possibleAncestors.map { .string($0.description) }).serialized()))
        }
        let path = databasePath + "/" + PathEncoding.documentID(request.id)
        do {
            // Attachments come as binary parts, as CouchDB's replicator asks for them.
            let response = try await send(.GET, path, query: query, body: nil, accept: "multipart/mixed",
                                          timeout: configuration.requestTimeout)
            guard response.status.code < 400 else {
                let failure = await error(answering: response)
                guard failure.isNotFound else { return .failure(failure) }
                return .success(request.missing.map { .missing(id: request.id, revision: $0) })
            }
            let type = response.headers.first(name: "Content-Type").map { MediaType(parsing: $0) }
            if type?.type == "multipart/mixed", let boundary = type?.boundary {
                let answers = try await openRevisionAnswers(response.body, boundary: boundary, parts: request.missing.count)
                return .success(answers.map { revision(from: $0, id: request.id) })
            }
            // A server that answers JSON whatever the Accept header says.
            let bytes = try await collect(response, answering: .GET, path, limit: ReplicatorTuning.largestRevisionsAnswer)
            guard case .array(let answers)? = try? JSON(parsing: bytes.readableBytesView) else {
                return .failure(.badResponse(displayName, "open_revs answered neither multipart nor a JSON array"))
            }
            return .success(answers.map { revision(from: $0, id: request.id) })
        } catch let error as EndpointError {
            return .failure(error)
        } catch let error as MultipartError {
            return .failure(.badResponse(displayName, "unreadable open_revs answer: \(error)"))
        } catch let error as JSONSyntaxError {
            return .failure(.badResponse(displayName, "unreadable open_revs answer: \(error)"))
        } catch let error as StoreError {
            return .failure(.badResponse(displayName, "unreadable open_revs attachment: \(error)"))
        } catch {
            return .failure(.unreachable(displayName, "reading the answer to GET \(path) failed: \(ConnectionFailure.plain(error))"))
        }
    }

    /// The parts of a `multipart/mixed` `open_revs` answer, read as they arrive, as JSON
    /// answers (`{"ok": doc}` or `{"missing": rev}`), each attachment that follows its
    /// document put inline, decoded when the server sent it gzip-encoded. At most one part
    /// per revision asked (`parts`), and at most ``ReplicatorTuning/largestRevisionsAnswer`` bytes in all.
    private func openRevisionAnswers<Body: AsyncSequence>(_ body: Body, boundary: String, parts: Int) async throws -> [JSON]
    where Body.Element == ByteBuffer {
        let outer = MultipartReader(boundary: boundary, body: body, maximumParts: parts)
        var remaining = ReplicatorTuning.largestRevisionsAnswer
        func read<Source>(_ reader: MultipartReader<Source>) async throws -> [UInt8] {
            let bytes = try await reader.readBody(limit: remaining)
            remaining -= bytes.count
            return bytes
        }
        var answers: [JSON] = []
        while let headers = try await outer.nextPart() {
            let type = MediaType(parsing: headers["content-type"] ?? "application/json")
            guard type.type == "multipart/related", let innerBoundary = type.boundary else {
                let json = try JSON(parsing: try await read(outer))
                answers.append(json["missing"] != nil ? json : ["ok": json])
                continue
            }
            let inner = MultipartReader(boundary: innerBoundary, body: outer.bodyChunks().map { ByteBuffer(bytes: $0) })
            guard try await inner.nextPart() != nil, case .object(var document) = try JSON(parsing: try await read(inner)) else {
                throw EndpointError.badResponse(displayName, "open_revs part without a document")
            }
            var attachments = document["_attachments"]?.objectValue ?? [:]
            let follows = attachments.compactMap { $0.value["follows"]?.boolValue == true ? $0.key : nil }
            var index = 0
            while let partHeaders = try await inner.nextPart() {
                let content = try await read(inner)
                guard let name = partHeaders.filename ?? (index < follows.count ? follows[index] : nil),
                      case .object(var entry)? = attachments[name] else {
                    throw EndpointError.badResponse(displayName, "open_revs attachment part matches no attachment")
                }
                index += 1
                var data = content
                if let encoding = entry["encoding"]?.stringValue, encoding != "identity" {
                    guard encoding == "gzip", let length = entry["length"]?.intValue, length <= remaining else {
                        throw EndpointError.badResponse(displayName, "attachment \(name) in an encoding other than gzip, or too large")
                    }
                    data = try AttachmentContentReader.decodeGzip(content, length: length)
                }
                for key in ["follows", "encoding", "encoded_length"] { entry[key] = nil }
                entry["data"] = .string(Data(data).base64EncodedString())
                entry["length"] = .number(Double(data.count))
                attachments[name] = .object(entry)
            }
            if !attachments.isEmpty { document["_attachments"] = .object(attachments) }
            answers.append(["ok": .object(document)])
        }
        return answers
    }

    /// One `{"ok": doc}`, `{"missing": rev}` or `{"error": {...}}` answer about document `id`.
    private func revision(from answer: JSON, id: String) -> FetchedRevision {
        if let document = answer["ok"], let text = document["_rev"]?.stringValue, let revision = RevisionID(text) {
            guard document["_id"]?.stringValue == id else {
                return .failed(id: id, revision: revision, reason: "the source answered with another document's id")
            }
            return .found(ReplicatedRevision(id: id, revision: revision, json: document))
        }
        if let missing = answer["missing"]?.stringValue {
            return .missing(id: id, revision: RevisionID(missing))
        }
        let failure = answer["error"]
        if failure?["error"]?.stringValue == "not_found" {
            return .missing(id: id, revision: failure?["rev"]?.stringValue.flatMap { RevisionID($0) })
        }
        return .failed(id: failure?["id"]?.stringValue ?? id, revision: failure?["rev"]?.stringValue.flatMap { RevisionID($0) },
                       reason: failure?["reason"]?.stringValue ?? failure?["error"]?.stringValue ?? "unreadable answer")
    }

    /// `POST _bulk_docs` with `new_edits: false`, in requests of at most a few megabytes;
    /// a revision carrying large attachments goes alone as a `multipart/related` PUT, as
    /// CouchDB's replicator sends it, so its content is not base64 inside JSON.
    public func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
        var failures: [WriteFailure] = []
        var small: [ReplicatedRevision] = []
        for revision in revisions {
            if Self.inlineAttachmentSize(revision.json) >= ReplicatorTuning.multipartThreshold {
                if let failure = try await putMultipart(revision) { failures.append(failure) }
            } else {
                small.append(revision)
            }
        }
        var batch: [ReplicatedRevision] = []
        var size = 0
        for (offset, revision) in small.enumerated() {
            batch.append(revision)
            size += revision.json.serializedBytes().count
            if size >= ReplicatorTuning.bulkDocsBudget || offset == small.count - 1 {
                failures += try await postBulkDocs(batch)
                batch.removeAll(keepingCapacity: true)
                size = 0
            }
        }
        return failures
    }

    /// How many base64 characters of attachment data a revision's JSON carries.
    static func inlineAttachmentSize(_ json: JSON) -> Int {
        guard case .object(let attachments)? = json["_attachments"] else { return 0 }
        return attachments.reduce(0) { $0 + ($1.value["data"]?.stringValue?.utf8.count ?? 0) }
    }

    /// `PUT /db/doc?new_edits=false` as `multipart/related`: the JSON with `"follows": true`
    /// attachments, then their bytes. Returns the failure when the target refuses the revision.
    private func putMultipart(_ revision: ReplicatedRevision) async throws(EndpointError) -> WriteFailure? {
        guard case .object(var document) = revision.json, case .object(let attachments)? = document["_attachments"] else {
            return WriteFailure(id: revision.id, error: "bad_request", reason: "revision has no attachments to send")
        }
        var described: [(key: String, value: JSON)] = []
        var contents: [(name: String, contentType: String, bytes: [UInt8])] = []
        for (name, entry) in attachments {
            guard case .object(var fields) = entry, let base64 = fields["data"]?.stringValue else {
                described.append((name, entry))
                continue
            }
            guard let bytes = Data(base64Encoded: base64) else {
                return WriteFailure(id: revision.id, error: "bad_request", reason: "invalid base64 in attachment \(name)")
            }
            fields["data"] = nil
            fields["follows"] = true
            fields["length"] = .number(Double(bytes.count))
            // The part is the content itself: its digest is the content's (a stored
            // digest of gzip bytes would fail the target's check).
            fields["digest"] = .string("md5-" + Data(Insecure.MD5.hash(data: bytes)).base64EncodedString())
            fields["encoding"] = nil
            fields["encoded_length"] = nil
            described.append((name, .object(fields)))
            contents.append((name, fields["content_type"]?.stringValue ?? "application/octet-stream", [UInt8](bytes)))
        }
        document["_attachments"] = .object(JSON.Object(described))
        var writer = MultipartWriter()
        writer.startPart([("Content-Type", "application/json")])
        writer.append(.bytes(JSON.object(document).serializedBytes()))
        for content in contents {
            writer.startPart([
                ("Content-Disposition", "attachment; filename=\"\(content.name.replacingOccurrences(of: "\"", with: "\\\""))\""),
                ("Content-Type", content.contentType),
                ("Content-Length", String(content.bytes.count)),
            ])
            writer.append(.bytes(content.bytes))
        }
        let contentType = writer.contentType("related")
        var body: [UInt8] = []
        for case .bytes(let bytes) in writer.finish() { body.append(contentsOf: bytes) }
        let (status, _, answer) = try await request(
            .PUT, databasePath + "/" + PathEncoding.documentID(revision.id), query: [("new_edits", "false")],
            body: body, contentType: contentType)
        guard status >= 400 else { return nil }
        let failure = error(status: status, body: try? JSON(parsing: answer.readableBytesView))
        if failure.isTransient || status == 401 { throw failure }
        return WriteFailure(id: revision.id, error: failure.error, reason: failure.reason)
    }

    /// Posts `revisions`; a request too large for the server (413) is split in halves and
    /// sent again, as CouchDB's replicator does, down to one revision, which the target refuses.
    private func postBulkDocs(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
        var body = Array(#"{"new_edits":false,"docs":["#.utf8)
        for (offset, revision) in revisions.enumerated() {
            if offset > 0 { body.append(UInt8(ascii: ",")) }
            revision.json.write(to: &body)
        }
        body.append(contentsOf: "]}".utf8)
        let (status, _, bytes) = try await request(.POST, databasePath + "/_bulk_docs", body: body)
        let json = try? JSON(parsing: bytes.readableBytesView)
        if status == 413 {
            guard revisions.count > 1 else {
                let failure = error(status: status, body: json)
                return [WriteFailure(id: revisions[0].id, error: failure.error, reason: failure.reason)]
            }
            let half = revisions.count / 2
            return try await postBulkDocs(Array(revisions[..<half])) + postBulkDocs(Array(revisions[half...]))
        }
        guard status < 400 else { throw error(status: status, body: json) }
        guard case .array(let results)? = json else { throw .badResponse(displayName, "_bulk_docs answered no array") }
        return results.compactMap { result in
            guard let error = result["error"]?.stringValue else { return nil }
            return WriteFailure(id: result["id"]?.stringValue ?? "", error: error, reason: result["reason"]?.stringValue ?? "")
        }
    }

    private func revisionList(_ json: JSON?) -> [RevisionID] {
        (json?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { RevisionID($0) } }
    }
}

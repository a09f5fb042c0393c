import AsyncAlgorithms
import AsyncHTTPClient
import FoundationEssentials
import JSON
import Locking
import Logging
import NIOCore
import NIOHTTP1
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

    /// `POST _bulk_get?revs=true&latest=true` as JSON, attachments as stubs: the fastest
    /// form for small documents. The revisions that carry attachments the target lacks are
    /// then read again with their attachments, from `_bulk_get` as CouchDB's `multipart/mixed`
    /// (or one `GET doc?open_revs=...` per document where the server has no `_bulk_get` or
    /// answers it only as JSON), each part staged in `staging` as it arrives. Each revision
    /// goes to `deliver` as soon as it is read: no answer is held whole.
    public func revisions(_ requests: [MissingRevisions], staging: AttachmentStaging,
                          deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
        guard !requests.isEmpty else { return }
        guard bulkGetSupported.withLock({ $0 }) != false else {
            return try await openRevisions(requests, staging: staging, deliver: deliver)
        }
        var needingContent: [MissingRevisions] = []
        let outcome = try await bulkGet(requests, withAttachments: false, staging: staging) { revision, knownAncestors in
            if case .found(let found) = revision, Self.lacksAttachmentContent(found.json, knownAncestors: knownAncestors) {
                needingContent.append(MissingRevisions(id: found.id, missing: [found.revision], possibleAncestors: knownAncestors))
            } else {
                await deliver(revision)
            }
        }
        switch outcome {
        case .unsupported:
            bulkGetSupported.withLock { $0 = false }
            return try await openRevisions(requests, staging: staging, deliver: deliver)
        case .unanswered(let rest):
            // A result over the document bound (a server sending attachments inline anyway).
            bulkGetSupported.withLock { $0 = true }
            try await openRevisions(rest, staging: staging, deliver: deliver)
        case .done:
            bulkGetSupported.withLock { $0 = true }
        }
        guard !needingContent.isEmpty else { return }
        switch try await bulkGet(needingContent, withAttachments: true, staging: staging, deliver: { revision, _ in await deliver(revision) }) {
        case .done: break
        case .unsupported: try await openRevisions(needingContent, staging: staging, deliver: deliver)
        case .unanswered(let rest): try await openRevisions(rest, staging: staging, deliver: deliver)
        }
    }

    /// Whether a revision read with attachment stubs has one the target lacks: an attachment
    /// changed after the newest revision of its history that the target has (CouchDB's `atts_since`
    /// rule), whose content must then be read.
    static func lacksAttachmentContent(_ document: JSON, knownAncestors: [RevisionID]) -> Bool {
        guard case .object(let attachments)? = document["_attachments"], !attachments.isEmpty else { return false }
        var generation = 0
        if !knownAncestors.isEmpty, let start = document["_revisions"]?["start"]?.intValue,
           let ids = document["_revisions"]?["ids"]?.arrayValue {
            let known = Set(knownAncestors)
            for (offset, id) in ids.enumerated() {
                if let digest = id.stringValue, let revision = RevisionID("\(start - offset)-\(digest)"), known.contains(revision) {
                    generation = revision.generation
                    break
                }
            }
        }
        return attachments.contains { _, entry in
            entry["data"] == nil && entry["follows"]?.boolValue != true && (entry["revpos"]?.intValue ?? .max) > generation
        }
    }

    /// This endpoint's spool: content read for it as a target waits there until it is sent.
    public func attachmentStaging() async throws(EndpointError) -> AttachmentStaging { .spool(spool) }

    /// The most bytes of one document's JSON read from the server: the document bound,
    /// and room for its history and attachment descriptions.
    var documentLimit: Int { configuration.maximumDocumentSize + ReplicatorTuning.documentMetadataAllowance }

    private enum BulkGetOutcome {
        case done
        case unsupported
        /// These requests were not answered: one result was larger than the document bound,
        /// or the answer to a request for attachments came as JSON.
        case unanswered([MissingRevisions])
    }

    /// One `_bulk_get`, read a result at a time: as JSON with attachment stubs, or (`withAttachments`)
    /// asking for the attachments the target lacks (`atts_since`) as `multipart/mixed`. Each revision
    /// goes to `deliver` with the ancestors the target has.
    private func bulkGet(_ requests: [MissingRevisions], withAttachments: Bool, staging: AttachmentStaging,
                         deliver: (FetchedRevision, _ knownAncestors: [RevisionID]) async -> Void) async throws(EndpointError) -> BulkGetOutcome {
        var docs: [JSON] = []
        for request in requests {
            let since = JSON.array(request.possibleAncestors.map { .string($0.description) })
            for revision in request.missing {
                var entry: JSON.Object = ["id": .string(request.id), "rev": .string(revision.description)]
                if withAttachments && !request.possibleAncestors.isEmpty { entry["atts_since"] = since }
                docs.append(.object(entry))
            }
        }
        let ancestors = Dictionary(requests.map { ($0.id, $0.possibleAncestors) }, uniquingKeysWith: { a, _ in a })
        var query = [("revs", "true"), ("latest", "true")]
        if withAttachments { query.append(("attachments", "true")) }
        let path = databasePath + "/_bulk_get"
        let response = try await send(.POST, path, query: query, body: JSON.object(["docs": .array(docs)]).serializedBytes(),
                                      accept: withAttachments ? "multipart/mixed" : "application/json", timeout: configuration.requestTimeout)
        // Whether the server has `_bulk_get` is decided by the status, before the body is read as a stream.
        guard response.status.code < 400 else {
            let failure = await error(answering: response)
            if [404, 405, 501].contains(failure.status) || (failure.status == 400 && failure.error == "illegal_docid") { return .unsupported }
            throw failure
        }
        // Only what was asked for: a server adding documents (or `_local/` ones) is refused.
        var answers = RequestedAnswers(requests, endpoint: displayName)
        let type = response.headers.first(name: "Content-Type").map { MediaType(parsing: $0) }
        let progress = progress(of: response, answering: "POST \(path)")
        defer { progress.stop() }
        do {
            if let type, type.type.hasPrefix("multipart/"), let boundary = type.boundary {
                // CouchDB's multipart answer: a part per revision (a document can have several
                // leaves), so parts are bounded by what was asked, with room for conflicts.
                let reader = MultipartRevisionReader(
                    boundary: boundary, body: progress.body, maximumParts: docs.count * ReplicatorTuning.leavesPerAskedRevision,
                    documentLimit: documentLimit, attachmentLimit: configuration.maximumAttachmentSize, staging: staging)
                while let answer = try await reader.next() {
                    progress.progressed()
                    let id = try answers.document(for: answer)
                    await deliver(answers.checked(revision(from: answer.json, id: id, files: answer.files)), ancestors[id] ?? [])
                }
            } else if withAttachments {
                // JSON where attachments were asked for as parts: one document at a time instead.
                return .unanswered(requests)
            } else {
                var splitter = ResultsSplitter(limit: documentLimit)
                var results = 0
                do {
                    for try await chunk in progress.body {
                        for element in try splitter.elements(in: chunk.readableBytesView) {
                            progress.progressed()
                            results += 1
                            // CouchDB answers one result for each revision asked.
                            guard results <= docs.count else {
                                throw EndpointError.badResponse(displayName, "_bulk_get answered more results than the \(docs.count) asked for")
                            }
                            let result: JSON
                            do { result = try JSON(parsing: element) } catch {
                                throw EndpointError.badResponse(displayName, "a _bulk_get result is not JSON: \(error)")
                            }
                            let id = try answers.document(named: result["id"]?.stringValue)
                            for answer in result["docs"]?.arrayValue ?? [] {
                                await deliver(answers.checked(revision(from: answer, id: id)), ancestors[id] ?? [])
                            }
                        }
                    }
                    try splitter.finish()
                } catch let error as ResultsSplitter.FramingError where error.isOversized {
                    logger.info("a _bulk_get result is over the document bound; reading the rest one document at a time",
                                metadata: ["endpoint": "\(displayName)", "limit": "\(documentLimit)"])
                    await failLeftOut(answers, deliver: deliver)
                    return .unanswered(answers.unanswered)
                }
            }
        } catch let error as EndpointError {
            throw error
        } catch let error as ResultsSplitter.FramingError {
            throw .badResponse(displayName, "malformed _bulk_get answer: \(error)")
        } catch let error as MultipartError {
            throw .badResponse(displayName, "unreadable _bulk_get answer: \(error)")
        } catch let error as JSONSyntaxError {
            throw .badResponse(displayName, "unreadable _bulk_get answer: \(error)")
        } catch let error as StoreError {
            throw .badResponse(displayName, "cannot stage an attachment of the _bulk_get answer: \(error)")
        } catch {
            throw .unreachable(displayName, "reading the answer to POST \(path) failed: \(ConnectionFailure.plain(error))")
        }
        // A document the answer left out is neither written nor refused: it must not be passed over.
        for request in answers.unanswered {
            for revision in request.missing {
                await deliver(.failed(id: request.id, revision: revision, reason: "the _bulk_get answer left it out"), [])
            }
        }
        await failLeftOut(answers, deliver: deliver)
        return .done
    }

    /// Fails the revisions asked for of documents the answer named, that no answer of it covered.
    private func failLeftOut(_ answers: RequestedAnswers, deliver: (FetchedRevision, _ knownAncestors: [RevisionID]) async -> Void) async {
        for (id, revision) in answers.leftOut {
            await deliver(.failed(id: id, revision: revision, reason: "the _bulk_get answer left out revision \(revision)"), [])
        }
    }

    /// One `GET doc?open_revs=[...]` per document, a few at a time, each document's
    /// revisions delivered once its answer is read.
    private func openRevisions(_ requests: [MissingRevisions], staging: AttachmentStaging,
                               deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
        let failure = await withTaskGroup(of: Result<[FetchedRevision], EndpointError>.self) { group -> EndpointError? in
            var next = 0
            var failure: EndpointError?
            func add() {
                let request = requests[next]
                next += 1
                group.addTask { await self.openRevisions(of: request, staging: staging) }
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

    private func openRevisions(of request: MissingRevisions, staging: AttachmentStaging) async -> Result<[FetchedRevision], EndpointError> {
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
                let progress = progress(of: response, answering: "GET \(path)")
                defer { progress.stop() }
                let reader = MultipartRevisionReader(
                    boundary: boundary, body: progress.body, maximumParts: request.missing.count * ReplicatorTuning.leavesPerAskedRevision,
                    documentLimit: documentLimit, attachmentLimit: configuration.maximumAttachmentSize, staging: staging)
                var fetched: [FetchedRevision] = []
                while let answer = try await reader.next() {
                    progress.progressed()
                    fetched.append(revision(from: answer.json, id: request.id, files: answer.files))
                }
                return .success(fetched)
            }
            // A server that answers JSON whatever the Accept header says: attachments inline,
            // the whole answer within the document bound.
            let bytes = try await collect(
                response, answering: "GET \(path)", limit: documentLimit,
                tooLarge: "\(request.id) is larger than the document bound of \(configuration.maximumDocumentSize) bytes"
                    + " (max_document_size; attachments beside it come as multipart parts, but this server sends them inline)")
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

    /// One `{"ok": doc}`, `{"missing": rev}` or `{"error": {...}}` answer about document `id`.
    private func revision(from answer: JSON, id: String, files: [String: AttachmentFile] = [:]) -> FetchedRevision {
        if let document = answer["ok"], let text = document["_rev"]?.stringValue, let revision = RevisionID(text) {
            guard document["_id"]?.stringValue == id else {
                return .failed(id: id, revision: revision, reason: "the source answered with another document's id")
            }
            return .found(ReplicatedRevision(id: id, revision: revision, json: document, files: files))
        }
        if let missing = answer["missing"]?.stringValue {
            return .missing(id: id, revision: RevisionID(missing))
        }
        let failure = answer["error"]
        if failure?["error"]?.stringValue == "not_found" {
            return .missing(id: id, revision: failure?["rev"]?.stringValue.flatMap { RevisionID($0) })
        }
        if failure?["error"]?.stringValue == StoreError.tooManyAttachments.error {
            return .refused(id: failure?["id"]?.stringValue ?? id, revision: failure?["rev"]?.stringValue.flatMap { RevisionID($0) },
                            reason: failure?["reason"]?.stringValue ?? StoreError.tooManyAttachments.reason)
        }
        return .failed(id: failure?["id"]?.stringValue ?? id, revision: failure?["rev"]?.stringValue.flatMap { RevisionID($0) },
                       reason: failure?["reason"]?.stringValue ?? failure?["error"]?.stringValue ?? "unreadable answer")
    }

    private func revisionList(_ json: JSON?) -> [RevisionID] {
        (json?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { RevisionID($0) } }
    }
}

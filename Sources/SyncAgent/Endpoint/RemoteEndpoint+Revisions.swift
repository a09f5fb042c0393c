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
    /// asking for CouchDB's `multipart/mixed` answer, or one `GET doc?open_revs=...`
    /// per document where the server lacks `_bulk_get`. Each revision goes to `deliver`
    /// as soon as its part of the answer is read, its attachments staged in `staging`
    /// as they arrive: the answer is never held whole.
    public func revisions(_ requests: [MissingRevisions], staging: AttachmentStaging,
                          deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
        guard !requests.isEmpty else { return }
        if bulkGetSupported.withLock({ $0 }) != false {
            switch try await bulkGet(requests, staging: staging, deliver: deliver) {
            case .done:
                bulkGetSupported.withLock { $0 = true }
                return
            case .unanswered(let rest):
                // A JSON answer with a result over the document bound: the rest as multipart.
                bulkGetSupported.withLock { $0 = true }
                try await openRevisions(rest, staging: staging, deliver: deliver)
                return
            case .unsupported:
                bulkGetSupported.withLock { $0 = false }
            }
        }
        try await openRevisions(requests, staging: staging, deliver: deliver)
    }

    /// This endpoint's spool: content read for it as a target waits there until it is sent.
    public func attachmentStaging() async throws(EndpointError) -> AttachmentStaging { .spool(spool) }

    /// The most bytes of one document's JSON read from the server: the document bound,
    /// and room for its history and attachment descriptions.
    var documentLimit: Int { configuration.maximumDocumentSize + ReplicatorTuning.documentMetadataAllowance }

    private enum BulkGetOutcome {
        case done
        case unsupported
        /// These requests were not answered: one result was larger than the document bound.
        case unanswered([MissingRevisions])
    }

    /// Reads the `_bulk_get` answer one result at a time.
    private func bulkGet(_ requests: [MissingRevisions], staging: AttachmentStaging,
                         deliver: (FetchedRevision) async -> Void) async throws(EndpointError) -> BulkGetOutcome {
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
                                      accept: "multipart/mixed", timeout: configuration.requestTimeout)
        // Whether the server has `_bulk_get` is decided by the status, before the body is read as a stream.
        guard response.status.code < 400 else {
            let failure = await error(answering: response)
            if [404, 405, 501].contains(failure.status) || (failure.status == 400 && failure.error == "illegal_docid") { return .unsupported }
            throw failure
        }
        // Only what was asked for: a server adding documents (or `_local/` ones) is refused.
        var answers = RequestedAnswers(requests, endpoint: displayName)
        let type = response.headers.first(name: "Content-Type").map { MediaType(parsing: $0) }
        do {
            if let type, type.type.hasPrefix("multipart/"), let boundary = type.boundary {
                // CouchDB's multipart answer: a part per revision (a document can have several
                // leaves), so parts are bounded by what was asked, with room for conflicts.
                let reader = MultipartRevisionReader(
                    boundary: boundary, body: response.body, maximumParts: docs.count * ReplicatorTuning.leavesPerAskedRevision,
                    documentLimit: documentLimit, attachmentLimit: configuration.maximumAttachmentSize, staging: staging)
                while let answer = try await reader.next() {
                    let id = try answers.document(for: answer)
                    await deliver(revision(from: answer.json, id: id, files: answer.files))
                }
            } else {
                var splitter = ResultsSplitter(limit: documentLimit)
                var results = 0
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
                            let id = try answers.document(named: result["id"]?.stringValue)
                            for answer in result["docs"]?.arrayValue ?? [] {
                                await deliver(revision(from: answer, id: id))
                            }
                        }
                    }
                    try splitter.finish()
                } catch let error as ResultsSplitter.FramingError where error.isOversized {
                    logger.info("a _bulk_get result is over the document bound; reading the rest one document at a time",
                                metadata: ["endpoint": "\(displayName)", "limit": "\(documentLimit)"])
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
                await deliver(.failed(id: request.id, revision: revision, reason: "the _bulk_get answer left it out"))
            }
        }
        return .done
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
                let reader = MultipartRevisionReader(
                    boundary: boundary, body: response.body, maximumParts: request.missing.count * ReplicatorTuning.leavesPerAskedRevision,
                    documentLimit: documentLimit, attachmentLimit: configuration.maximumAttachmentSize, staging: staging)
                var fetched: [FetchedRevision] = []
                while let answer = try await reader.next() {
                    fetched.append(revision(from: answer.json, id: request.id, files: answer.files))
                }
                return .success(fetched)
            }
            // A server that answers JSON whatever the Accept header says: attachments inline,
            // the whole answer within the document bound.
            let bytes: ByteBuffer
            do {
                bytes = try await response.body.collect(upTo: documentLimit)
            } catch is NIOTooManyBytesError {
                return .failure(.badResponse(displayName, "\(request.id) is larger than the document bound of \(configuration.maximumDocumentSize) bytes"
                                             + " (max_document_size; attachments beside it come as multipart parts, but this server sends them inline)"))
            }
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
        return .failed(id: failure?["id"]?.stringValue ?? id, revision: failure?["rev"]?.stringValue.flatMap { RevisionID($0) },
                       reason: failure?["reason"]?.stringValue ?? failure?["error"]?.stringValue ?? "unreadable answer")
    }

    private func revisionList(_ json: JSON?) -> [RevisionID] {
        (json?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { RevisionID($0) } }
    }
}

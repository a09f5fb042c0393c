import AsyncHTTPClient
import Crypto
import FoundationEssentials
import JSON
import NIOCore
import NIOHTTP1
import Store

extension RemoteEndpoint {
    /// `POST _bulk_docs` with `new_edits: false`, in requests of at most a few megabytes;
    /// a revision carrying attachment files, or large inline attachments, goes alone as a
    /// `multipart/related` PUT, as CouchDB's replicator sends it, its files streamed.
    public func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
        var failures: [WriteFailure] = []
        var small: [ReplicatedRevision] = []
        for revision in revisions {
            if !revision.files.isEmpty || Self.inlineAttachmentSize(revision.json) >= ReplicatorTuning.multipartThreshold {
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
    /// attachments, then their bytes, streamed from their files (as stored: an encoded one
    /// keeps its `encoding`). Returns the failure when the target refuses the revision.
    private func putMultipart(_ revision: ReplicatedRevision) async throws(EndpointError) -> WriteFailure? {
        guard case .object(var document) = revision.json, case .object(let attachments)? = document["_attachments"] else {
            return WriteFailure(id: revision.id, error: "bad_request", reason: "revision has no attachments to send")
        }
        var described: [(key: String, value: JSON)] = []
        var parts: [(name: String, contentType: String, segment: MultipartSegment, encoding: String?)] = []
        for (name, entry) in attachments {
            guard case .object(var fields) = entry else {
                described.append((name, entry))
                continue
            }
            let contentType = fields["content_type"]?.stringValue ?? "application/octet-stream"
            if let file = revision.files[name], fields["follows"]?.boolValue == true {
                parts.append((name, contentType, .file(path: file.path, length: file.length), fields["encoding"]?.stringValue))
            } else if let base64 = fields["data"]?.stringValue {
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
                parts.append((name, contentType, .bytes([UInt8](bytes)), nil))
            } else if fields["follows"]?.boolValue == true {
                return WriteFailure(id: revision.id, error: "bad_request", reason: "attachment \(name) has no content to send")
            }
            described.append((name, .object(fields)))
        }
        document["_attachments"] = .object(JSON.Object(described))
        var writer = MultipartWriter()
        writer.startPart([("Content-Type", "application/json")])
        writer.append(.bytes(JSON.object(document).serializedBytes()))
        for part in parts {
            var headers = [
                ("Content-Disposition", "attachment; filename=\"\(part.name.replacing("\"", with: "\\\""))\""),
                ("Content-Type", part.contentType),
                ("Content-Length", String(part.segment.length)),
            ]
            if let encoding = part.encoding { headers.append(("Content-Encoding", encoding)) }
            writer.startPart(headers)
            writer.append(part.segment)
        }
        let contentType = writer.contentType("related")
        let segments = writer.finish()
        let length = MultipartSegment.length(of: segments)
        let path = databasePath + "/" + PathEncoding.documentID(revision.id)
        // The answer comes once the body is sent: the time allowed grows with the body, at 1 MB/s.
        let timeout = configuration.requestTimeout + .seconds(length / 1_000_000)
        let response = try await send(.PUT, path, query: [("new_edits", "false")],
                                      body: .stream(MultipartSegmentChunks(segments: segments), length: .known(Int64(length))),
                                      accept: "application/json", contentType: contentType, timeout: timeout)
        let status = Int(response.status.code)
        guard status >= 400 else {
            _ = try? await collect(response, answering: "PUT \(path)", limit: ReplicatorTuning.largestErrorAnswer)
            return nil
        }
        let failure = await error(answering: response)
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
}

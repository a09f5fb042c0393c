import FoundationEssentials
import JSON
import NIOCore
import Store

/// Reads revisions from a `multipart/mixed` answer as CouchDB sends them for
/// `_bulk_get` and `open_revs`, a part at a time as it arrives: a document
/// without attachments is an `application/json` part; one with attachments a
/// `multipart/related` part, its JSON first and then each attachment that
/// follows, which goes straight to a staged file; a missing or unreadable
/// revision an `application/json; error="true"` part.
///
/// A document's JSON is read up to `documentLimit` bytes and an attachment up
/// to `attachmentLimit`; nothing else is held, whatever the answer's size.
final class MultipartRevisionReader<Body: AsyncSequence> where Body.Element == ByteBuffer {
    /// One part of the answer: the document it names, if it says, its answer in
    /// `open_revs`' JSON form (`{"ok": doc}`, `{"missing": rev}` or `{"error": {...}}`),
    /// and the files of the attachments that followed it.
    struct Answer {
        var documentID: String?
        var json: JSON
        var files: [String: AttachmentFile] = [:]
    }

    private let outer: MultipartReader<Body>
    private let documentLimit: Int
    private let attachmentLimit: Int
    private let staging: AttachmentStaging

    /// A reader of `body`, whose parts `boundary` separates, refusing more than `maximumParts` parts.
    init(boundary: String, body: Body, maximumParts: Int, documentLimit: Int, attachmentLimit: Int, staging: AttachmentStaging) {
        outer = MultipartReader(boundary: boundary, body: body, maximumParts: maximumParts)
        self.documentLimit = documentLimit
        self.attachmentLimit = attachmentLimit
        self.staging = staging
    }

    /// The next answer; `nil` after the last.
    func next() async throws -> Answer? {
        guard let headers = try await outer.nextPart() else { return nil }
        let type = MediaType(parsing: headers["content-type"] ?? "application/json")
        guard type.type == "multipart/related", let boundary = type.boundary else {
            let json = try JSON(parsing: try await readDocument(outer))
            return Answer(documentID: headers["x-doc-id"], json: Self.answer(json))
        }
        // Parts past a document's bound are read (and dropped), so one document no node may
        // store is refused alone and the answer's next parts are still read.
        let inner = MultipartReader(boundary: boundary, body: outer.bodyChunks(), maximumParts: .max)
        guard try await inner.nextPart() != nil, case .object(var document) = try JSON(parsing: try await readDocument(inner)) else {
            throw MultipartError.malformed("a multipart/related part without a document")
        }
        var attachments = document["_attachments"]?.objectValue ?? [:]
        if attachments.count > Database.maximumAttachments {
            while try await inner.nextPart() != nil {
                for try await _ in inner.bodyChunks() {}
            }
            return Answer(documentID: headers["x-doc-id"] ?? document["_id"]?.stringValue, json: ["error": [
                "id": document["_id"] ?? .null, "rev": document["_rev"] ?? .null,
                "error": .string(StoreError.tooManyAttachments.error), "reason": .string(StoreError.tooManyAttachments.reason),
            ]])
        }
        let follows = attachments.compactMap { $0.value["follows"]?.boolValue == true ? $0.key : nil }
        var files: [String: AttachmentFile] = [:]
        var received = Set<String>()
        var index = 0
        while let partHeaders = try await inner.nextPart() {
            guard let name = partHeaders.filename ?? (index < follows.count ? follows[index] : nil),
                  follows.contains(name), !received.contains(name), case .object(var entry)? = attachments[name] else {
                throw MultipartError.malformed("an attachment part matches no attachment that follows")
            }
            index += 1
            received.insert(name)
            if let file = try await staging.stage(inner.bodyChunks(), limit: attachmentLimit) {
                files[name] = file
                continue
            }
            // Inline: the content itself in `data`, decoded when the server sent it encoded; held
            // in memory, so within the document bound, as inline content in JSON is.
            var content = try await inner.readBody(limit: documentLimit)
            if let encoding = entry["encoding"]?.stringValue, encoding != "identity" {
                guard encoding == "gzip", let length = entry["length"]?.intValue, length <= documentLimit else {
                    throw MultipartError.malformed("attachment \(name) in an encoding other than gzip, or too large")
                }
                content = try AttachmentContentReader.decodeGzip(content, length: length)
            }
            for key in ["follows", "encoding", "encoded_length", "length"] { entry[key] = nil }
            entry["data"] = .string(Data(content).base64EncodedString())
            attachments[name] = .object(entry)
        }
        // Content announced but never sent must not be written as if it were there.
        if let absent = follows.first(where: { !received.contains($0) }) {
            return Answer(documentID: document["_id"]?.stringValue, json: ["error": [
                "id": document["_id"] ?? .null, "rev": document["_rev"] ?? .null,
                "error": "bad_response", "reason": .string("attachment \(absent) did not follow its document"),
            ]])
        }
        if staging.isInline && !attachments.isEmpty { document["_attachments"] = .object(attachments) }
        return Answer(documentID: headers["x-doc-id"] ?? document["_id"]?.stringValue, json: ["ok": .object(document)], files: files)
    }

    private func readDocument<Source>(_ reader: MultipartReader<Source>) async throws -> [UInt8] {
        do {
            return try await reader.readBody(limit: documentLimit)
        } catch MultipartError.tooLarge {
            throw MultipartError.documentTooLarge(documentLimit)
        }
    }

    /// A JSON part in `open_revs`' answer form: a document is `{"ok": doc}`; `{"missing": rev}`
    /// stays; `_bulk_get`'s `{"id", "rev", "error", "reason"}` becomes `{"error": {...}}`.
    private static func answer(_ json: JSON) -> JSON {
        if json["missing"] != nil || json["ok"] != nil { return json }
        if json["error"]?.stringValue != nil && json["_rev"] == nil { return ["error": json] }
        return ["ok": json]
    }
}

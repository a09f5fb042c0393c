import FoundationEssentials
import HTTPTypes
import Hummingbird
import JSON
import Store

/// `GET/HEAD/PUT/DELETE /{db}/{docid}/{attachment}`: one attachment, streamed
/// from its file on the way out and to a staged file on the way in.
extension CouchResponder {
    func attachment(_ name: String, of id: String, in db: Database, method: HTTPRequest.Method,
                    _ exchange: inout Exchange) async throws -> Response {
        switch method {
        case .get:
            let attachment = try db.attachment(documentID: id, name: name, revision: try exchange.query.revision("rev"))
            let etag = "\"\(attachment.digest)\""
            if exchange.request.headers[.ifNoneMatch] == etag {
                return Response(status: .notModified, headers: [.eTag: etag])
            }
            var headers: HTTPFields = [.eTag: etag, .contentType: attachment.contentType]
            // As CouchDB: ranges of the stored bytes when they are the content; none of an encoded attachment.
            headers[.acceptRanges] = attachment.encoding == nil ? "bytes" : "none"
            let path = db.attachmentPath(attachment)
            if attachment.encoding == nil {
                switch ByteRanges(header: exchange.request.headers[.range], length: attachment.length) {
                case .whole:
                    break
                case .unsatisfiable:
                    var error = CouchError.rangeNotSatisfiable
                    error.headers[.contentRange] = "bytes */\(attachment.length)"
                    throw error
                case .parts(let ranges):
                    return Self.partial(ranges, of: path, length: attachment.length, contentType: attachment.contentType, headers: headers)
                }
            }
            // Stored bytes go out as they are when they are the content, or when the
            // client takes their encoding; otherwise they are decoded on the way out.
            let asStored = attachment.encoding.map { encoding in
                exchange.request.headers[values: .acceptEncoding].contains { $0.lowercased().contains(encoding.name) }
            } ?? true
            if asStored {
                if attachment.digest.hasPrefix("md5-") { headers[HTTPField.Name("Content-MD5")!] = String(attachment.digest.dropFirst(4)) }
                if let encoding = attachment.encoding { headers[.contentEncoding] = encoding.name }
                headers[.contentLength] = String(attachment.storedLength)
                let segments = [MultipartSegment.file(path: path, length: attachment.storedLength)]
                return Response(status: .ok, headers: headers, body: ResponseBody(contentLength: attachment.storedLength) { writer in
                    try await MultipartSegment.write(segments) { try await writer.write($0) }
                    try await writer.finish(nil)
                })
            }
            headers[.contentLength] = String(attachment.length)
            return Response(status: .ok, headers: headers, body: ResponseBody(contentLength: attachment.length) { writer in
                let reader = try db.attachmentReader(attachment)
                while let piece = try reader.next() { try await writer.write(ByteBuffer(bytes: piece)) }
                try await writer.finish(nil)
            })
        case .put:
            try exchange.principal.checkMayEdit()
            let revision = try exchange.revisionFromQueryOrHeader()
            var document: JSON.Object = ["_id": .string(id)]
            if let revision {
                let current = try db.document(id: id, revision: revision)
                document = current.json().objectValue ?? document
            } else if (try? db.document(id: id)) != nil {
                throw StoreError.conflict
            }
            // CouchDB's answer for either: 413 attachment_too_large, the attachment's name as the reason.
            if let length = exchange.request.headers[.contentLength].flatMap(Int.init), length > configuration.maximumAttachmentSize {
                throw StoreError.attachmentTooLarge(name: name)
            }
            let staged = try await Self.stage(exchange.request.body.map { $0.readableBytesView }, named: name, in: db,
                                              limit: configuration.maximumAttachmentSize)
            defer { db.discardStaged(staged) }
            var attachments = document["_attachments"]?.objectValue ?? [:]
            attachments[name] = ["content_type": .string(exchange.request.headers[.contentType] ?? "application/octet-stream"), "follows": true]
            document["_attachments"] = .object(attachments)
            return try await writeDocument(.object(document), staged: [name: staged], in: db, exchange: exchange)
        case .delete:
            guard let revision = try exchange.revisionFromQueryOrHeader() else { throw StoreError.conflict }
            var document = try db.document(id: id, revision: revision).json().objectValue ?? [:]
            var attachments = document["_attachments"]?.objectValue ?? [:]
            guard attachments.removeValue(forKey: name) != nil else { throw CouchError.notFound("Document is missing attachment") }
            document["_attachments"] = attachments.isEmpty ? nil : .object(attachments)
            let response = try await writeDocument(.object(document), in: db, exchange: exchange)
            var ok = response
            ok.status = .ok
            return ok
        default:
            throw CouchError.methodNotAllowed
        }
    }

    /// Streams an attachment's bytes to its staged file; past `limit` bytes the file is
    /// removed and the answer is 413 attachment_too_large with the attachment's name.
    static func stage<Chunks: AsyncSequence>(_ chunks: Chunks, named name: String, in db: Database, limit: Int) async throws -> StagedAttachment
    where Chunks.Element: Collection<UInt8> {
        do {
            return try await db.stageAttachment(chunks, limit: limit)
        } catch let error as StoreError where error.error == "attachment_too_large" {
            throw StoreError.attachmentTooLarge(name: name)
        }
    }

    /// The 206 answer to a satisfiable `Range`: one range as the body with its
    /// `Content-Range`, several as `multipart/byteranges` (CouchDB's layout), each
    /// read from the attachment's file at its offset and nothing else of it.
    static func partial(_ ranges: [ClosedRange<Int>], of path: String, length: Int, contentType: String,
                        headers: HTTPFields) -> Response {
        var fields = headers
        let segments: [MultipartSegment]
        if ranges.count == 1, let range = ranges.first {
            fields[.contentType] = contentType
            fields[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(length)"
            segments = [.file(path: path, offset: range.lowerBound, length: range.count)]
        } else {
            let boundary = UUID().uuidString.replacing("-", with: "").lowercased()
            fields[.contentType] = "multipart/byteranges; boundary=\"\(boundary)\""
            var parts: [MultipartSegment] = [.bytes(Array("--\(boundary)".utf8))]
            for range in ranges {
                let head = "\r\nContent-Type: \(contentType)\r\nContent-Range: bytes \(range.lowerBound)-\(range.upperBound)/\(length)\r\n\r\n"
                parts.append(.bytes(Array(head.utf8)))
                parts.append(.file(path: path, offset: range.lowerBound, length: range.count))
                parts.append(.bytes(Array("\r\n--\(boundary)".utf8)))
            }
            parts.append(.bytes(Array("--".utf8)))
            segments = parts
        }
        let bodyLength = MultipartSegment.length(of: segments)
        fields[.contentLength] = String(bodyLength)
        return Response(status: .partialContent, headers: fields, body: ResponseBody(contentLength: bodyLength) { writer in
            try await MultipartSegment.write(segments) { try await writer.write($0) }
            try await writer.finish(nil)
        })
    }
}

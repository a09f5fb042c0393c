import Foundation
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
            headers[.acceptRanges] = "none"
            // Stored bytes go out as they are when they are the content, or when the
            // client takes their encoding; otherwise they are decoded on the way out.
            let asStored = attachment.encoding.map { encoding in
                exchange.request.headers[values: .acceptEncoding].contains { $0.lowercased().contains(encoding.name) }
            } ?? true
            if asStored {
                if attachment.digest.hasPrefix("md5-") { headers[HTTPField.Name("Content-MD5")!] = String(attachment.digest.dropFirst(4)) }
                if let encoding = attachment.encoding { headers[.contentEncoding] = encoding.name }
                headers[.contentLength] = String(attachment.storedLength)
                let segments = [MultipartSegment.file(path: db.attachmentPath(attachment), length: attachment.storedLength)]
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
            if let length = exchange.request.headers[.contentLength].flatMap(Int.init), length > configuration.maximumAttachmentSize {
                throw CouchError.tooLarge
            }
            let staged = try await db.stageAttachment(exchange.request.body.map { $0.readableBytesView }, limit: configuration.maximumAttachmentSize)
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
}

import Hummingbird
import JSON
import Store

/// `GET/POST /{db}/_all_docs`: documents by id, with `keys` in the query or the POST body.
extension CouchResponder {
    func allDocs(_ db: Database, _ exchange: inout Exchange) async throws -> Response {
        let query = exchange.query
        var options = AllDocsOptions()
        options.startKey = try query.jsonString("startkey") ?? query.jsonString("start_key")
            ?? query["startkey_docid"] ?? query["start_key_doc_id"]
        options.endKey = try query.jsonString("endkey") ?? query.jsonString("end_key")
            ?? query["endkey_docid"] ?? query["end_key_doc_id"]
        options.inclusiveEnd = try query.bool("inclusive_end", default: true)
        options.limit = try query.integer("limit")
        options.skip = try query.integer("skip") ?? 0
        options.descending = try query.bool("descending")
        options.includeDocuments = try query.bool("include_docs")
        let conflicts = try query.bool("conflicts")
        if let key = try query.jsonString("key") {
            options.keys = [key]
        }
        if let keys = try query.json("keys") {
            options.keys = try Self.keys(keys)
        }
        if exchange.request.method == .post {
            let body = try await exchange.readObject(limit: configuration.maximumRequestSize)
            if let keys = body["keys"] { options.keys = try Self.keys(keys) }
        }
        // Without keys the rows are read in pages, each continuing after the
        // last id of the one before, so memory stays bounded. Pages are large
        // because the store counts the offset of every page's start key.
        let pageSize = options.includeDocuments ? 1000 : 10_000
        let userLimit = options.limit
        var first = options
        if options.keys == nil { first.limit = min(options.limit ?? Int.max, pageSize) }
        // Pages are read on the scan threads: a page of 10,000 rows, or a listing by many keys, takes a while.
        let firstPage = try await ScanThreads.run { [first] in try db.allDocs(first) }
        var header = #"{"total_rows":\#(firstPage.totalRows),"offset":\#(options.keys == nil ? firstPage.offset : 0),"#
        if try query.bool("update_seq") { header += #""update_seq":\#(firstPage.updateSequence),"# }
        header += #""rows":["#
        return Self.streamingJSON { [header, first] writer in
            var output = Array(header.utf8)
            var page = firstPage
            var options = first
            var remaining = options.keys == nil ? userLimit.map { $0 - firstPage.rows.count } : nil
            var count = 0
            while true {
                for row in page.rows {
                    output += count == 0 ? [0x0A] : [UInt8(ascii: ","), 0x0A]
                    count += 1
                    Self.writeRow(row, includeDocuments: options.includeDocuments, conflicts: conflicts, to: &output)
                }
                if output.count >= Self.flushSize {
                    try await writer.write(ByteBuffer(bytes: output))
                    output.removeAll(keepingCapacity: true)
                }
                guard options.keys == nil, page.rows.count == options.limit, remaining.map({ $0 > 0 }) ?? true,
                      let last = page.rows.last else { break }
                options.startKey = last.id
                options.skip = 1
                options.limit = min(pageSize, remaining ?? pageSize)
                page = try await ScanThreads.run { [options] in try db.allDocs(options) }
                remaining = remaining.map { $0 - page.rows.count }
            }
            output += Array("\n]}\n".utf8)
            try await writer.write(ByteBuffer(bytes: output))
        }
    }

    private static func writeRow(_ row: AllDocsRow, includeDocuments: Bool, conflicts: Bool, to output: inout [UInt8]) {
        var entry: JSON.Object
        if let revision = row.revision {
            var value: JSON.Object = ["rev": .string(revision.description)]
            if row.deleted { value["deleted"] = true }
            entry = ["id": .string(row.id), "key": .string(row.id), "value": .object(value)]
            if includeDocuments {
                entry["doc"] = row.document.map { $0.json(conflicts ? [.conflicts] : []) } ?? .null
            }
        } else {
            entry = ["key": .string(row.id), "error": "not_found"]
        }
        JSON.object(entry).write(to: &output)
    }

    private static func keys(_ value: JSON) throws(CouchError) -> [String] {
        guard case .array(let items) = value else { throw .badRequest("`keys` must be an array of strings") }
        var keys: [String] = []
        for item in items {
            guard let key = item.stringValue else { throw .badRequest("`keys` must be an array of strings") }
            keys.append(key)
        }
        return keys
    }
}

import Hummingbird
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
        let page = try db.allDocs(options)
        var output: [UInt8] = Array(#"{"total_rows":\#(page.totalRows),"offset":\#(options.keys == nil ? page.offset : 0),"#.utf8)
        if try query.bool("update_seq") { output += Array(#""update_seq":\#(page.updateSequence),"#.utf8) }
        output += Array(#""rows":["#.utf8)
        for (index, row) in page.rows.enumerated() {
            output += index == 0 ? [0x0A] : [UInt8(ascii: ","), 0x0A]
            var entry: JSON.Object
            if let revision = row.revision {
                var value: JSON.Object = ["rev": .string(revision.description)]
                if row.deleted { value["deleted"] = true }
                entry = ["id": .string(row.id), "key": .string(row.id), "value": .object(value)]
                if options.includeDocuments {
                    entry["doc"] = row.document.map { $0.json(conflicts ? [.conflicts] : []) } ?? .null
                }
            } else {
                entry = ["key": .string(row.id), "error": "not_found"]
            }
            JSON.object(entry).write(to: &output)
        }
        output += Array("\n]}\n".utf8)
        return Self.bytesResponse(output)
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

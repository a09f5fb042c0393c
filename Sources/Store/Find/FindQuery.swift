import FoundationEssentials
import JSON

/// A Mango query: the body of `POST /{db}/_find` (or `_explain`), parsed and checked
/// once, with CouchDB's defaults and its errors for what it refuses.
public struct FindQuery: Sendable {
    /// One field to sort by.
    public struct SortField: Sendable, Hashable {
        /// The dotted field name.
        public let name: String
        let path: FieldPath
    }

    /// Which documents.
    public let selector: Selector
    /// At most this many documents (CouchDB's default: 25).
    public let limit: Int
    /// Matching documents to pass over first.
    public let skip: Int
    /// The order, when one is asked for: fields all in one direction.
    public let sort: [SortField]
    /// Whether the sort is descending.
    public let descending: Bool
    /// Only these fields of each document (`nil`: the whole document).
    public var fields: [String]? { fieldPaths?.map(\.name) }
    /// The same, parsed once for every document the query projects.
    let fieldPaths: [FieldPath]?
    /// The index asked for (`use_index`): a design document, and maybe a name.
    public let useIndex: (designDocument: String, name: String?)?
    /// Where the previous page ended.
    public let bookmark: Bookmark?
    /// Whether each document carries `_conflicts`.
    public let conflicts: Bool
    /// Whether the answer carries `execution_stats`.
    public let executionStats: Bool
    /// Whether a query whose `use_index` cannot serve it runs on another index (the default) or fails.
    public let allowFallback: Bool
    /// Whether indexes are brought up to date before the query reads them (the
    /// default); `"update": false` or `"stale": "ok"` read them as they are.
    public let update: Bool

    /// The most names `fields` may list: a bound on the work of projecting each document.
    public static let maximumFields = 1000

    /// The request's members CouchDB accepts.
    private static let known: Set<String> = [
        "selector", "limit", "skip", "sort", "fields", "use_index", "bookmark", "conflicts", "r", "stable",
        "update", "stale", "execution_stats", "allow_fallback", "partition",
    ]

    /// Parses a `_find` body.
    ///
    /// - Throws: 400 with CouchDB's error names: `missing_required_key` without a
    ///   selector, `invalid_selector_json` and the selector's own errors,
    ///   `invalid_sort_json`, `invalid_sort_field`, `unsupported_mixed_sort`,
    ///   `invalid_bookmark`, `invalid_key` for a member CouchDB does not know, and
    ///   CouchDB's type errors (`invalid_non_neg_integer`, `invalid_boolean`, ...).
    public init(_ json: JSON) throws(StoreError) {
        guard case .object(let request) = json else {
            throw StoreError(.badRequest, error: "invalid_ejson", reason: "Invalid JSON value: \(json.serialized())")
        }
        if let key = request.keys.first(where: { !Self.known.contains($0) }) {
            throw StoreError(.badRequest, error: "invalid_key", reason: "Invalid key \(key) for this request.")
        }
        guard let selector = request["selector"] else {
            throw StoreError(.badRequest, error: "missing_required_key", reason: "Missing required key: selector")
        }
        self.selector = try Selector(selector)
        limit = try Self.count(request["limit"], "limit", default: 25)
        skip = try Self.count(request["skip"], "skip", default: 0)
        (sort, descending) = try Self.sort(request["sort"] ?? .array([]))
        switch request["fields"] {
        case nil: fieldPaths = nil
        case .array(let names)? where names.count > Self.maximumFields:
            throw StoreError(.badRequest, error: "invalid_fields", reason: "Fields may name at most \(Self.maximumFields) fields.")
        case .array(let names)?:
            var parsed: [FieldPath] = []
            for name in names {
                guard let field = name.stringValue, let path = try? FieldPath(field) else {
                    throw StoreError(.badRequest, error: "invalid_field", reason: "Invalid JSON for field spec: \(name.serialized())")
                }
                parsed.append(path)
            }
            fieldPaths = parsed.isEmpty ? nil : parsed
        case let other?:
            throw StoreError(.badRequest, error: "invalid_fields", reason: "Fields must be an array of strings, not: \(other.serialized())")
        }
        switch request["use_index"] {
        case nil: useIndex = nil
        case .string(let text)?:
            // "ddoc", "_design/ddoc", "ddoc/name" or "_design/ddoc/name".
            let parts = (text.hasPrefix("_design/") ? String(text.dropFirst(8)) : text).split(separator: "/", omittingEmptySubsequences: false)
            switch parts.count {
            case _ where text.isEmpty: useIndex = nil
            case 1: useIndex = (QueryIndex.designDocumentID(String(parts[0])), nil)
            case 2: useIndex = (QueryIndex.designDocumentID(String(parts[0])), String(parts[1]))
            default: throw StoreError(.badRequest, error: "invalid_index_name", reason: "Invalid index name: \(JSON.string(text).serialized())")
            }
        case .array(let names)? where names.isEmpty: useIndex = nil
        case .array(let names)? where (1...2).contains(names.count) && names.allSatisfy({ $0.stringValue != nil }):
            useIndex = (QueryIndex.designDocumentID(names[0].stringValue!), names.count == 2 ? names[1].stringValue! : nil)
        case let other?: throw StoreError(.badRequest, error: "invalid_index_name", reason: "Invalid index name: \(other.serialized())")
        }
        switch request["bookmark"] {
        case nil, .null?, .string("")?, .string("nil")?: bookmark = nil
        case .string(let text)?: bookmark = try Bookmark(text)
        default: throw StoreError(.badRequest, error: "invalid_bookmark", reason: "Invalid bookmark value: \(request["bookmark"]!.serialized())")
        }
        conflicts = try Self.flag(request["conflicts"], "conflicts", default: false)
        executionStats = try Self.flag(request["execution_stats"], "execution_stats", default: false)
        allowFallback = try Self.flag(request["allow_fallback"], "allow_fallback", default: true)
        // Accepted as CouchDB accepts them; one node holds one current copy of each index.
        _ = try Self.flag(request["stable"], "stable", default: false)
        let update = try Self.flag(request["update"], "update", default: true)
        if let r = request["r"], (r.intValue ?? 0) < 1 || r.doubleValue != Double(r.intValue ?? 0) {
            throw StoreError(.badRequest, error: "invalid_pos_integer", reason: "\(r.serialized()) is not an integer greater than zero")
        }
        if let stale = request["stale"], stale != .string("ok"), stale != .string("false"), stale != .bool(false) {
            throw StoreError(.badRequest, error: "invalid_stale", reason: "Invalid value for stale: \(stale.serialized())")
        }
        self.update = update && request["stale"] != .string("ok")
    }

    private static func count(_ value: JSON?, _ name: String, default fallback: Int) throws(StoreError) -> Int {
        guard let value else { return fallback }
        guard let number = value.intValue, number >= 0, value.doubleValue == Double(number) else {
            throw StoreError(.badRequest, error: "invalid_non_neg_integer", reason: "\(value.serialized()) is not an integer greater than or equal to zero")
        }
        return number
    }

    private static func flag(_ value: JSON?, _ name: String, default fallback: Bool) throws(StoreError) -> Bool {
        guard let value else { return fallback }
        guard let flag = value.boolValue else {
            throw StoreError(.badRequest, error: "invalid_boolean", reason: "Invalid boolean value: \(value.serialized())")
        }
        return flag
    }

    /// `["a", {"b": "asc"}]`: names, or one-member objects naming a direction; one direction for all.
    static func sort(_ json: JSON) throws(StoreError) -> ([SortField], Bool) {
        guard case .array(let entries) = json else {
            throw StoreError(.badRequest, error: "invalid_sort_json", reason: "Sort must be an array of sort specs: \(json.serialized())")
        }
        var fields: [SortField] = []
        var directions: Set<Bool> = []
        for entry in entries {
            switch entry {
            case .string(let name) where !name.isEmpty:
                fields.append(SortField(name: name, path: try FieldPath(name)))
                directions.insert(false)
            case .object(let object) where object.count == 1 && !object.members[0].key.isEmpty
                && (object.members[0].value == "asc" || object.members[0].value == "desc"):
                let (name, direction) = object.members[0]
                fields.append(SortField(name: name, path: try FieldPath(name)))
                directions.insert(direction.stringValue == "desc")
            default:
                throw StoreError(.badRequest, error: "invalid_sort_field", reason: "Invalid sort field: \(entry.serialized())")
            }
        }
        if directions.count > 1 {
            throw StoreError(.badRequest, error: "unsupported_mixed_sort", reason: "Sorts currently only support a single direction for all fields.")
        }
        return (fields, directions.first ?? false)
    }
}

/// Where a page of `_find` ended: the last document's index key and id. The next
/// page starts strictly after it, so paging while writes go on neither repeats
/// nor skips a document whose key did not change.
public struct Bookmark: Sendable, Hashable {
    /// The index's key of the last document (empty for `_all_docs`).
    let key: [UInt8]
    /// The last document's id.
    let id: String

    init(key: [UInt8], id: String) {
        self.key = key
        self.id = id
    }

    /// Reads a bookmark a previous answer gave.
    init(_ text: String) throws(StoreError) {
        var base64 = text.replacing("-", with: "+").replacing("_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), case .array(let parts)? = try? JSON(parsing: Array(data)), parts.count == 2,
            let key = parts[0].stringValue.flatMap(Hex.bytes), let id = parts[1].stringValue
        else { throw StoreError(.badRequest, error: "invalid_bookmark", reason: "Invalid bookmark value: \(JSON.string(text).serialized())") }
        self.init(key: key, id: id)
    }

    /// The text an answer carries: URL-safe base64, no padding.
    public var text: String {
        let json: JSON = [.string(Hex.string(key)), .string(id)]
        return Data(json.serialized().utf8).base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }
}

import Crypto
import JSON

/// A Mango JSON index: documents ordered by the values of some fields, in
/// CouchDB collation, for `_find` to read a range of instead of every document.
///
/// The definition lives where CouchDB keeps it, in a design document with
/// `"language": "query"` (one view per index), so an index made on CouchDB
/// replicates to syncd and works there, and the reverse. Its entries are brought
/// up to date from the changes feed when queried (``IndexEntries``).
public struct QueryIndex: Sendable, Hashable {
    /// One indexed field and its direction.
    public struct Field: Sendable, Hashable {
        /// The dotted field name as written.
        public let name: String
        /// Whether it was declared `desc`.
        public let descending: Bool
        let path: FieldPath
    }

    /// The most fields one index may have; a definition with more is refused (400) or, in a
    /// design document that arrives by replication, left out.
    public static let maximumFields = 64
    /// The most indexes one database keeps; definitions beyond it are left out. Every
    /// index adds work to each query's catch-up of every changed document.
    public static let maximumIndexes = 100

    /// The design document's id (`_design/...`).
    public let designDocument: String
    /// The index's name: the view's name in the design document.
    public let name: String
    /// The indexed fields, in key order.
    public let fields: [Field]
    /// Only documents matching this are in the index (`partial_filter_selector`).
    public let partialFilter: Selector?

    /// The index's definition as `GET /{db}/_index` shows it (`def`).
    public var definition: JSON {
        var def: JSON.Object = ["fields": .array(fields.map { .object(JSON.Object([(key: $0.name, value: .string($0.descending ? "desc" : "asc"))])) })]
        if let partialFilter { def["partial_filter_selector"] = partialFilter.json }
        return .object(def)
    }

    /// Whether `document` (with `_id`) belongs in the index, and under which key:
    /// the collation sort keys of its field values one after another. A document
    /// lacking any of the fields is not in the index, as in CouchDB.
    func key(of document: JSON) -> [UInt8]? {
        if let partialFilter, !partialFilter.matches(document) { return nil }
        var key: [UInt8] = []
        for field in fields {
            guard case .found(let value) = field.path.lookup(in: document) else { return nil }
            CollationSortKey.append(value, to: &key)
        }
        return key
    }
}

extension QueryIndex {
    /// The JSON indexes a design document defines; none unless its `language` is `query`.
    /// Views that are not JSON index definitions are skipped.
    static func indexes(inDesignDocument id: String, body: JSON) -> [QueryIndex] {
        guard body["language"]?.stringValue == "query", case .object(let views)? = body["views"] else { return [] }
        return views.members.prefix(maximumIndexes).compactMap { name, view in
            guard case .object(let fields)? = view["map"]?["fields"], !fields.isEmpty, fields.count <= maximumFields else { return nil }
            var parsed: [Field] = []
            // The order of the fields is the order of `options.def.fields`, an array: a JSON
            // object's member order does not survive every store (syncd's sorts them).
            if let def = view["options"]?["def"]?["fields"], let (sorted, descending) = try? FindQuery.sort(def),
                Set(sorted.map(\.name)) == Set(fields.keys)
            {
                parsed = sorted.map { Field(name: $0.name, descending: descending, path: $0.path) }
            } else {
                for (field, direction) in fields.members {
                    guard let path = try? FieldPath(field) else { return nil }
                    parsed.append(Field(name: field, descending: direction.stringValue == "desc", path: path))
                }
            }
            var filter: Selector?
            if case .object(let selector)? = view["map"]?["partial_filter_selector"], !selector.isEmpty {
                guard let valid = try? Selector(.object(selector)) else { return nil }
                filter = valid
            }
            return QueryIndex(designDocument: id, name: name, fields: parsed, partialFilter: filter)
        }
    }

    /// Parses the body of `POST /{db}/_index`: `index.fields` (names or `{name: direction}`,
    /// in one direction, as a sort is written), `index.partial_filter_selector`, `ddoc`, `name` and `type`.
    /// The default design document and name derive from the definition, so creating the
    /// same index twice finds the first.
    public static func parse(creation json: JSON) throws(StoreError) -> QueryIndex {
        guard case .object(let request) = json else {
            throw StoreError(.badRequest, error: "invalid_ejson", reason: "Invalid JSON value: \(json.serialized())")
        }
        if let key = request.keys.first(where: { !["index", "ddoc", "name", "type", "partitioned", "w"].contains($0) }) {
            throw StoreError(.badRequest, error: "invalid_key", reason: "Invalid key \(key) for this request.")
        }
        switch request["type"] {
        case nil, .string("json")?: break
        case .string(let type)?: throw invalidIndex("Invalid type for index: \(type)")
        case let other?: throw StoreError(.badRequest, error: "invalid_string", reason: "Invalid string: \(other.serialized())")
        }
        guard let rawIndex = request["index"] else {
            throw StoreError(.badRequest, error: "missing_required_key", reason: "Missing required key: index")
        }
        guard case .object(let index) = rawIndex else { throw invalidIndex("JSON indexes must be an object, not: \(rawIndex.serialized())") }
        if let key = index.keys.first(where: { $0 != "fields" && $0 != "partial_filter_selector" }) {
            throw StoreError(.badRequest, error: "invalid_key", reason: "Invalid key \(key) for this request.")
        }
        guard let rawFields = index["fields"] else {
            throw StoreError(.badRequest, error: "missing_required_key", reason: "Missing required key: fields")
        }
        if let count = rawFields.arrayValue?.count, count > maximumFields {
            throw invalidIndex("An index has at most \(maximumFields) fields.")
        }
        let (sorted, descending) = try FindQuery.sort(rawFields)
        guard !sorted.isEmpty else { throw invalidIndex("Index definition must have at least one field.") }
        var fields: [Field] = []
        for field in sorted where !fields.contains(where: { $0.name == field.name }) {
            fields.append(Field(name: field.name, descending: descending, path: field.path))
        }
        var filter: Selector?
        if let selector = index["partial_filter_selector"] {
            let parsed = try Selector(selector)
            filter = parsed.json.objectValue?.isEmpty == false ? parsed : nil
        }
        let draft = QueryIndex(designDocument: "", name: "", fields: fields, partialFilter: filter)
        let digest = Hex.string(Insecure.SHA1.hash(data: Array(draft.definition.serialized().utf8)))
        func name(_ key: String, _ fallback: String) throws(StoreError) -> String {
            guard let value = request[key] else { return fallback }
            guard let string = value.stringValue else {
                throw StoreError(.badRequest, error: "invalid_string", reason: "Invalid string: \(value.serialized())")
            }
            guard !string.isEmpty, string != "_design/" else { throw invalidIndex("Invalid \(key): it must not be empty.") }
            return string
        }
        return QueryIndex(designDocument: designDocumentID(try name("ddoc", digest)), name: try name("name", digest), fields: fields,
                          partialFilter: filter)
    }

    /// The id of design document `name`, given with or without `_design/`.
    static func designDocumentID(_ name: String) -> String { name.hasPrefix("_design/") ? name : "_design/" + name }

    /// The view this index is in its design document, as CouchDB writes it.
    var view: JSON {
        var map: JSON.Object = ["fields": .object(JSON.Object(fields.map { ($0.name, .string($0.descending ? "desc" : "asc")) }))]
        map["partial_filter_selector"] = partialFilter?.json ?? .object([:])
        return ["map": .object(map), "reduce": "_count", "options": ["def": definition]]
    }

    /// Whether two indexes keep the same entries.
    func sameEntries(as other: QueryIndex) -> Bool {
        fields.map(\.name) == other.fields.map(\.name) && partialFilter == other.partialFilter
    }
}

/// CouchDB's 400 for a bad index definition.
func invalidIndex(_ reason: String) -> StoreError {
    StoreError(.badRequest, error: "invalid_index", reason: reason)
}

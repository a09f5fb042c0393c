import JSON

/// A query of one view: CouchDB's view parameters (`GET /{db}/_design/{ddoc}/_view/{view}`).
public struct ViewQuery: Sendable {
    /// When the index is brought up to date (CouchDB's `update`).
    public enum Update: String, Sendable {
        /// Before answering (the default).
        case `true`
        /// Never: the index as it is.
        case `false`
        /// After answering: this answer reads the index as it is.
        case lazy
    }

    /// Only rows with these keys, in this order (`keys`; `key` is one).
    public var keys: [JSON]?
    /// The first key (the last when descending), and the first document id among rows of that key.
    public var startKey: JSON?
    public var startKeyDocumentID: String?
    /// The last key (the first when descending), and the last document id among rows of that key.
    public var endKey: JSON?
    public var endKeyDocumentID: String?
    /// Whether rows at the end key (and end document id) are included.
    public var inclusiveEnd = true
    public var descending = false
    public var limit: Int?
    public var skip = 0
    /// Whether to reduce; `nil` reduces when the view has a reduce function.
    public var reduce: Bool?
    /// `group=true`: one row per distinct key.
    public var group: Bool?
    /// `group_level=N`: one row per distinct first N elements of array keys.
    public var groupLevel: Int?
    public var includeDocuments = false
    /// With ``includeDocuments``: each document's `_conflicts`.
    public var conflicts = false
    public var update: Update = .true
    /// Whether the answer says the sequence the index has read up to.
    public var updateSequence = false

    /// Every row of the view.
    public init() {}

    /// Whether rows are reduced for `view`, or why the query cannot be answered: CouchDB's
    /// `query_parse_error`s of `couch_mrview_util:validate_args`, in its order.
    func reduces(_ view: ViewGroup.View) throws(StoreError) -> Bool {
        func refuse(_ reason: String) -> StoreError { StoreError(.badRequest, error: "query_parse_error", reason: reason) }
        if group == false, let groupLevel, groupLevel > 0 { throw refuse("Can't specify group=false and group_level>0 at the same time") }
        if view.reduce == nil, reduce == true { throw refuse("Reduce is invalid for map-only views.") }
        let reduces = view.reduce != nil && reduce != false
        let exact = groupLevel == nil && group == true
        if reduces, !exact, let keys, keys.count > 1 { throw refuse("Multi-key fetches for reduce views must use `group=true`") }
        if let keys, !keys.isEmpty, startKey != nil || endKey != nil {
            throw refuse("`keys` is incompatible with `key`, `start_key` and `end_key`")
        }
        if let limit, limit < 0 { throw refuse("`limit` must be a positive integer.") }
        if skip < 0 { throw refuse("`skip` must be >= 0") }
        if !reduces, exact || (groupLevel ?? 0) > 0 { throw refuse("Invalid use of grouping on a map view.") }
        if reduces, includeDocuments { throw refuse("`include_docs` is invalid for reduce") }
        if reduces, conflicts { throw refuse("`conflicts` is invalid for reduce views.") }
        if let startKey, let endKey, startKey != endKey {
            let order = Collation.compare(startKey, endKey)
            if descending ? order < 0 : order > 0 {
                throw refuse("No rows can match your key range, reverse your start_key and end_key or set descending=\(descending ? "false" : "true")")
            }
        }
        return reduces
    }

    /// How rows are grouped when reduced: `nil` for one row of all, else the number of leading
    /// array elements keys are cut to (`Int.max` for whole keys). `group_level` wins over `group`.
    var groupingLevel: Int? {
        if let groupLevel { return groupLevel > 0 ? groupLevel : nil }
        return group == true ? Int.max : nil
    }

    /// The query with a `keys` of one key read as `key`, as CouchDB 3.5 reads it.
    var normalized: ViewQuery {
        guard let keys, keys.count == 1, startKey == nil, endKey == nil else { return self }
        var query = self
        query.keys = nil
        query.startKey = keys[0]
        query.endKey = keys[0]
        return query
    }
}

/// One row of a view's answer.
public struct ViewRow: Sendable, Hashable {
    /// The document that emitted it; `nil` for a reduced row.
    public let id: String?
    public let key: JSON
    public let value: JSON
    /// With `include_docs`: the document (`.null` when it is gone), else `nil`.
    public let document: JSON?

    /// CouchDB's row object.
    public var json: JSON {
        var members: JSON.Object = [:]
        if let id { members["id"] = .string(id) }
        members["key"] = key
        members["value"] = value
        if let document { members["doc"] = document }
        return .object(members)
    }
}

/// A view's answer.
public struct ViewResult: Sendable {
    /// Rows in the view, and rows before the first returned; `nil` for a reduced answer.
    public let totalRows: Int?
    public let offset: Int?
    public let rows: [ViewRow]
    /// The sequence the index has read up to.
    public let updateSequence: UInt64

    /// CouchDB's body; `update_seq` when asked for.
    public func json(updateSequence withSequence: Bool) -> JSON {
        var members: JSON.Object = [:]
        if let totalRows { members["total_rows"] = .number(Double(totalRows)) }
        if let offset { members["offset"] = .number(Double(offset)) }
        if withSequence { members["update_seq"] = .number(Double(updateSequence)) }
        members["rows"] = .array(rows.map(\.json))
        return .object(members)
    }
}

import JSON

/// Which index a `_find` reads and which range of it, chosen as CouchDB 3.5 chooses.
///
/// A JSON index can serve a query when the selector requires every one of its
/// fields but the sort fields (a document lacking one is not in the index, so it
/// could not match; CouchDB lets a sort field go unrequired) and, with a sort, when the sort fields are the index's fields in order, after
/// any leading fields the selector fixes with `$eq`. An index with a
/// `partial_filter_selector` serves only a query that names it in `use_index`.
/// Among those that can, the one with the longest run of leading fields the
/// selector bounds wins, then the one with fewer fields, then by design document
/// and name (CouchDB's `choose_best_index`).
/// With none, the query reads every document (`_all_docs`) with a warning, or
/// fails if it asked for a sort.
struct QueryPlan: Sendable {
    enum Source: Sendable {
        /// Every document in id order, within these id bounds.
        case allDocs(lower: (String, inclusive: Bool)?, upper: (String, inclusive: Bool)?)
        /// Entries of a JSON index with keys in `lower..<upper`.
        case index(IndexEntries.Stored, lower: [UInt8]?, upper: [UInt8]?)
        /// Nothing: the selector is an empty `$or`, `$and`, `$in` or `$all` alone, which
        /// CouchDB answers with no documents without reading any.
        case nothing
    }

    let source: Source
    let descending: Bool
    let warnings: [String]

    static let noIndexWarning = "No matching index found, create an index to optimize query time."

    /// With `"allow_fallback": false`, the index named cannot serve the query.
    private static let unusable = StoreError(
        .badRequest, error: "no_usable_index", reason: "The index specified with \"use_index\" is not usable for the query.")

    init(_ query: FindQuery, indexes: [IndexEntries.Stored]) throws(StoreError) {
        let conditions = Self.conditions(query.selector.clause)
        let required = query.selector.clause.map(Self.requiredFields) ?? []
        var warnings: [String] = []
        descending = query.descending
        if Self.isEmptyAlone(query.selector.clause) {
            (source, self.warnings) = (.nothing, [])
            return
        }
        var candidates = indexes.filter { $0.index.partialFilter == nil }
        if let wanted = query.useIndex {
            let named = indexes.filter { $0.index.designDocument == wanted.designDocument && (wanted.name == nil || $0.index.name == wanted.name) }
            let usable = named.filter { Self.isUsable($0.index, required: required, conditions: conditions, sort: query.sort) }
            if !usable.isEmpty {
                candidates = usable
            } else {
                guard query.allowFallback else { throw Self.unusable }
                warnings.append(wanted.name.map { "\(wanted.designDocument), \($0) was not used because it is not a valid index for this query." }
                    ?? "\(wanted.designDocument) was not used because it does not contain a valid index for this query.")
            }
        }
        let usable = candidates.filter { Self.isUsable($0.index, required: required, conditions: conditions, sort: query.sort) }
        let ranked = usable.map { stored in (stored, Self.boundedPrefix(stored.index, conditions)) }
        if let best = ranked.min(by: { a, b in
            if a.1 != b.1 { return a.1 > b.1 }
            if a.0.index.fields.count != b.0.index.fields.count { return a.0.index.fields.count < b.0.index.fields.count }
            return (a.0.index.designDocument, a.0.index.name) < (b.0.index.designDocument, b.0.index.name)
        })?.0 {
            let (lower, upper) = Self.range(best.index, conditions)
            source = .index(best, lower: lower, upper: upper)
        } else {
            // `_all_docs` serves a sort on `_id` only when the selector bounds `_id`.
            let boundsID = (conditions["_id"] ?? []).contains { Bounds([$0], order: Collation.compare).lower != nil || Bounds([$0], order: Collation.compare).upper != nil }
            guard query.sort.isEmpty || (query.sort.map(\.name) == ["_id"] && boundsID) else {
                throw StoreError(.badRequest, error: "no_usable_index",
                                 reason: "No index exists for this sort, try indexing by the sort fields.")
            }
            // As CouchDB 3.4 and later: no fallback means not to `_all_docs` either.
            if !query.allowFallback {
                throw query.useIndex != nil ? Self.unusable : StoreError(
                    .badRequest, error: "no_usable_index", reason: "No index can serve this query, and \"allow_fallback\" is false.")
            }
            source = Self.idRange(conditions)
            warnings.append(Self.noIndexWarning)
        }
        self.warnings = warnings
    }

    // MARK: - Conditions

    private static func isEmptyAlone(_ clause: Clause?) -> Bool {
        switch clause {
        case .or(let clauses)?, .and(let clauses)?: clauses.isEmpty
        case .field(_, .in(let values))?, .field(_, .all(let values))?: values.isEmpty
        default: false
        }
    }

    /// The conditions every match must meet on each field: the top-level `$and`'s.
    private static func conditions(_ clause: Clause?) -> [String: [Condition]] {
        var found: [String: [Condition]] = [:]
        func collect(_ clause: Clause) {
            switch clause {
            case .and(let clauses): clauses.forEach(collect)
            case .field(let path, let condition): found[path.name, default: []].append(condition)
            default: break
            }
        }
        clause.map(collect)
        return found
    }

    /// The fields a document must have to match, as CouchDB's `has_required_fields`
    /// reads them: any condition but `{"$exists": false}` requires its field,
    /// through `$and`, and through `$or` when every branch requires it.
    private static func requiredFields(_ clause: Clause) -> Set<String> {
        switch clause {
        case .field(let path, let condition): condition.isExistsFalse ? [] : [path.name]
        case .and(let clauses): clauses.reduce(into: Set<String>()) { $0.formUnion(requiredFields($1)) }
        case .or(let clauses):
            clauses.isEmpty ? [] : clauses.dropFirst().reduce(requiredFields(clauses[0])) { $0.intersection(requiredFields($1)) }
        case .nor, .not: []
        }
    }

    private static func isConstant(_ field: String, _ conditions: [String: [Condition]]) -> Bool {
        conditions[field]?.contains { if case .eq = $0 { true } else { false } } ?? false
    }

    /// CouchDB's rule: the selector requires every field of the index but the
    /// sort fields (and `_id`, `_rev`), and the sort can be read from it.
    private static func isUsable(
        _ index: QueryIndex, required: Set<String>, conditions: [String: [Condition]], sort: [FindQuery.SortField]
    ) -> Bool {
        let sorted = Set(sort.map(\.name))
        let needed = index.fields.map(\.name).filter { !sorted.contains($0) && $0 != "_id" && $0 != "_rev" }
        guard needed.allSatisfy(required.contains) else { return false }
        guard !sort.isEmpty else { return true }
        // Leading columns the selector fixes with `$eq` may come before the sort fields,
        // which must then be the next columns, in order (CouchDB's `can_use_sort`).
        var columns = index.fields.map(\.name)[...]
        while let next = columns.first, next != sort[0].name, isConstant(next, conditions) { columns.removeFirst() }
        return columns.starts(with: sort.map(\.name))
    }

    // MARK: - Ranges

    /// A bound on a field's values from its conditions: the tightest of each side.
    private struct Bounds {
        var lower: (JSON, inclusive: Bool)?
        var upper: (JSON, inclusive: Bool)?
        var isPoint: Bool {
            guard let lower, let upper, lower.inclusive, upper.inclusive else { return false }
            return Collation.compare(lower.0, upper.0) == 0
        }

        init(_ conditions: [Condition], order: (JSON, JSON) -> Int) {
            for condition in conditions {
                switch condition {
                case .eq(let value): raise(value, true, order); cap(value, true, order)
                case .gt(let value): raise(value, false, order)
                case .gte(let value): raise(value, true, order)
                case .lt(let value): cap(value, false, order)
                case .lte(let value): cap(value, true, order)
                default: break
                }
            }
        }

        private mutating func raise(_ value: JSON, _ inclusive: Bool, _ order: (JSON, JSON) -> Int) {
            if let lower {
                let c = order(value, lower.0)
                if c < 0 || (c == 0 && (inclusive || !lower.inclusive)) { return }
            }
            lower = (value, inclusive)
        }

        private mutating func cap(_ value: JSON, _ inclusive: Bool, _ order: (JSON, JSON) -> Int) {
            if let upper {
                let c = order(value, upper.0)
                if c > 0 || (c == 0 && (inclusive || !upper.inclusive)) { return }
            }
            upper = (value, inclusive)
        }
    }

    /// How many leading fields of `index` the selector bounds in any way: CouchDB's
    /// prefix of columns with a range, by which it ranks indexes.
    private static func boundedPrefix(_ index: QueryIndex, _ conditions: [String: [Condition]]) -> Int {
        var count = 0
        for field in index.fields {
            let bounds = Bounds(conditions[field.name] ?? [], order: Collation.compare)
            guard bounds.lower != nil || bounds.upper != nil else { break }
            count += 1
        }
        return count
    }

    /// The key range of `index` a match must fall in. Keys are the fields' sort
    /// keys one after another; each is self-delimiting and starts with a byte below
    /// 0xFF, so appending 0xFF to a prefix passes every key that starts with it.
    /// `_id` compares by raw order in a selector, not by collation, so it bounds nothing here.
    private static func range(_ index: QueryIndex, _ conditions: [String: [Condition]]) -> ([UInt8]?, [UInt8]?) {
        var prefix: [UInt8] = []
        for field in index.fields {
            if field.name == "_id" { break }
            let bounds = Bounds(conditions[field.name] ?? [], order: Collation.compare)
            if bounds.isPoint, let value = bounds.lower?.0 {
                CollationSortKey.append(value, to: &prefix)
                continue
            }
            var lower: [UInt8]? = prefix.isEmpty ? nil : prefix
            var upper: [UInt8]? = prefix.isEmpty ? nil : prefix + [0xFF]
            if let bound = bounds.lower {
                var key = prefix
                CollationSortKey.append(bound.0, to: &key)
                if !bound.inclusive { key.append(0xFF) }
                lower = key
            }
            if let bound = bounds.upper {
                var key = prefix
                CollationSortKey.append(bound.0, to: &key)
                if bound.inclusive { key.append(0xFF) }
                upper = key
            }
            return (lower, upper)
        }
        return prefix.isEmpty ? (nil, nil) : (prefix, prefix + [0xFF])
    }

    /// Bounds on `_id` from conditions on it with string arguments (raw order is byte order).
    private static func idRange(_ conditions: [String: [Condition]]) -> Source {
        let strings = (conditions["_id"] ?? []).filter { condition in
            switch condition {
            case .eq(.string), .gt(.string), .gte(.string), .lt(.string), .lte(.string): true
            default: false
            }
        }
        let bounds = Bounds(strings) { a, b in
            let (x, y) = (a.stringValue ?? "", b.stringValue ?? "")
            return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : (x.utf8.elementsEqual(y.utf8) ? 0 : 1)
        }
        return .allDocs(lower: bounds.lower.map { ($0.0.stringValue ?? "", $0.inclusive) },
                        upper: bounds.upper.map { ($0.0.stringValue ?? "", $0.inclusive) })
    }
}

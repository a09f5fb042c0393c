import JSON

/// A Mango selector, parsed and validated once, then matched against many documents.
///
/// Filtered replication and the `_changes?filter=_selector` feed decide with it
/// which documents pass. It follows CouchDB's `/{db}/_find` selector semantics,
/// including the normalization CouchDB applies before matching (implicit `$and`
/// and `$eq`, nested field names joined into dotted paths, `$not` and `$nor`
/// pushed down to the conditions).
///
/// ```swift
/// let selector = try Selector(["type": "note", "tags": ["$elemMatch": ["$eq": "work"]]])
/// selector.matches(["_id": "n1", "type": "note", "tags": ["work", "home"]])   // true
/// ```
///
/// Like CouchDB, a condition on a field the document lacks fails, whatever the
/// operator (`$ne` and `$nin` included); only `{"$exists": false}` matches a
/// missing field.
public struct Selector: Sendable, Hashable {
    /// The selector as given, to send to a remote that evaluates it itself.
    public let json: JSON

    /// The normalized selector; `nil` for `{}`, which matches every document.
    let clause: Clause?

    /// Parses and validates `json`.
    ///
    /// - Throws: a ``StoreError`` of kind `badRequest` (400) with CouchDB's error
    ///   name and reason (`bad_arg`, `invalid_operator`, `not_supported`,
    ///   `invalid_selector`, `invalid_selector_json`) when the
    ///   selector is not an object, names an unknown or unsupported operator, or
    ///   gives an operator an argument of the wrong type (such as `$in` without an
    ///   array, or a `$regex` that does not compile).
    public init(_ json: JSON) throws(StoreError) {
        guard case .object(let object) = json else {
            throw StoreError(
                .badRequest, error: "invalid_selector_json", reason: "Selector must be a JSON object, not: \(json.serialized())")
        }
        self.json = json
        self.clause = object.isEmpty ? nil : try Clause.normalized(json)
    }

    /// Whether `document` (the full document body, with `_id`, `_rev` and
    /// `_deleted` if any) satisfies the selector.
    public func matches(_ document: JSON) -> Bool {
        guard let clause else { return true }
        return clause.matches(document)
    }

    public static func == (lhs: Selector, rhs: Selector) -> Bool { lhs.json == rhs.json }

    public func hash(into hasher: inout Hasher) { hasher.combine(json) }
}

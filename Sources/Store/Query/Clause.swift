import JSON

/// A selector in CouchDB's normalized form: combinators over conditions on
/// fields. Nested field names are joined into one dotted path, implicit `$and`
/// and `$eq` are made explicit, and `$not`/`$nor` are pushed down to the fields
/// (which is why `{"$not": {"a": 1}}` does not match a document without `a`).
indirect enum Clause: Sendable {
    case and([Clause])
    case or([Clause])
    /// Left only inside `$elemMatch`, `$allMatch` and `$keyMapMatch`, which
    /// CouchDB does not normalize through.
    case nor([Clause])
    case not(Clause)
    case field(FieldPath, Condition)
}

/// A condition on one value.
indirect enum Condition: Sendable {
    case eq(JSON), ne(JSON), lt(JSON), lte(JSON), gt(JSON), gte(JSON)
    case `in`([JSON]), nin([JSON])
    case exists(Bool)
    case type(String)
    case mod(divisor: Int, remainder: Int)
    case regex(RegexPattern)
    case beginsWith(String)
    case size(Int)
    case all([JSON])
    case elemMatch(Clause), allMatch(Clause), keyMapMatch(Clause)
    case not(Condition)

    /// Whether this is `{"$exists": false}`, the one condition a missing field meets.
    var isExistsFalse: Bool {
        if case .exists(false) = self { return true }
        return false
    }

    /// The negation, as CouchDB's normalizer writes it.
    var negated: Condition {
        switch self {
        case .lt(let value): .gte(value)
        case .lte(let value): .gt(value)
        case .gt(let value): .lte(value)
        case .gte(let value): .lt(value)
        case .eq(let value): .ne(value)
        case .ne(let value): .eq(value)
        case .in(let values): .nin(values)
        case .nin(let values): .in(values)
        case .exists(let exists): .exists(!exists)
        case .not(let condition): condition
        default: .not(self)
        }
    }
}

extension Clause {
    /// Parses and normalizes a non-empty selector object.
    static func normalized(_ json: JSON) throws(StoreError) -> Clause {
        let clause = try parse(json, path: "").pushingNegationsDown()
        if case .field(let path, _) = clause, path.steps.isEmpty {
            throw StoreError(.badRequest, error: "invalid_selector", reason: "One or more conditions is missing a field name.")
        }
        return clause
    }

    /// Parses `json` as the condition on the field `path` (`""` for the value itself).
    private static func parse(_ json: JSON, path: String) throws(StoreError) -> Clause {
        guard case .object(let object) = json, !object.isEmpty else {
            return .field(try FieldPath(path), .eq(json))
        }
        if object.count > 1 {
            var clauses: [Clause] = []
            for (key, value) in object.members {
                clauses.append(try parse(.object(JSON.Object([(key, value)])), path: path))
            }
            return .and(clauses)
        }
        let (key, value) = object.members[0]
        guard key.hasPrefix("$") else {
            return try parse(value, path: path.isEmpty ? key : path + "." + key)
        }
        switch key {
        case "$and": return .and(try parseList(value, key, path: path))
        case "$or": return .or(try parseList(value, key, path: path))
        case "$nor": return .nor(try parseList(value, key, path: path))
        case "$not":
            guard case .object = value else { throw badArgument(key, value) }
            return .not(try parse(value, path: path))
        case "$elemMatch", "$allMatch", "$keyMapMatch":
            guard case .object = value else { throw badArgument(key, value) }
            let inner = try parse(value, path: "")
            let condition: Condition =
                switch key {
                case "$elemMatch": .elemMatch(inner)
                case "$allMatch": .allMatch(inner)
                default: .keyMapMatch(inner)
                }
            return .field(try FieldPath(path), condition)
        default:
            return .field(try FieldPath(path), try Condition(key, value))
        }
    }

    private static func parseList(_ json: JSON, _ op: String, path: String) throws(StoreError) -> [Clause] {
        guard case .array(let elements) = json else { throw badArgument(op, json) }
        var clauses: [Clause] = []
        for element in elements { clauses.append(try parse(element, path: path)) }
        return clauses
    }

    /// Applies De Morgan's laws so that negations end up on the conditions of
    /// fields, as CouchDB does before matching.
    private func pushingNegationsDown() -> Clause {
        switch self {
        case .not(let clause): clause.negated()
        case .nor(let clauses): .and(clauses.map { $0.negated() })
        case .and(let clauses): .and(clauses.map { $0.pushingNegationsDown() })
        case .or(let clauses): .or(clauses.map { $0.pushingNegationsDown() })
        case .field: self
        }
    }

    private func negated() -> Clause {
        switch self {
        case .not(let clause): clause.pushingNegationsDown()
        case .nor(let clauses): .or(clauses.map { $0.pushingNegationsDown() })
        case .and(let clauses): .or(clauses.map { $0.negated() })
        case .or(let clauses): .and(clauses.map { $0.negated() })
        case .field(let path, let condition): .field(path, condition.negated)
        }
    }
}

extension Condition {
    /// The JSON type names `$type` accepts.
    static let typeNames: Set<String> = ["null", "boolean", "number", "string", "array", "object"]

    /// Parses the operator `op` with its argument.
    init(_ op: String, _ argument: JSON) throws(StoreError) {
        switch op {
        case "$eq": self = .eq(argument)
        case "$ne": self = .ne(argument)
        case "$lt": self = .lt(argument)
        case "$lte": self = .lte(argument)
        case "$gt": self = .gt(argument)
        case "$gte": self = .gte(argument)
        case "$in", "$nin", "$all":
            guard case .array(let values) = argument else { throw badArgument(op, argument) }
            self = op == "$in" ? .in(values) : op == "$nin" ? .nin(values) : .all(values)
        case "$exists":
            guard case .bool(let exists) = argument else { throw badArgument(op, argument) }
            self = .exists(exists)
        case "$type":
            // CouchDB accepts any string here (an unknown name just never matches).
            guard case .string(let name) = argument else { throw badArgument(op, argument) }
            self = .type(name)
        case "$mod":
            guard case .array(let values) = argument, values.count == 2,
                let divisor = values[0].intValue, let remainder = values[1].intValue, divisor != 0
            else { throw badArgument(op, argument) }
            self = .mod(divisor: divisor, remainder: remainder)
        case "$regex":
            guard case .string(let pattern) = argument else { throw badArgument(op, argument) }
            self = .regex(try RegexPattern(pattern))
        case "$beginsWith":
            guard case .string(let prefix) = argument else { throw badArgument(op, argument) }
            self = .beginsWith(prefix)
        case "$size":
            guard let size = argument.intValue, size >= 0 else { throw badArgument(op, argument) }
            self = .size(size)
        case "$text", "$where", "$geoWithin", "$geoIntersects", "$near", "$nearSphere":
            throw StoreError(.badRequest, error: "not_supported", reason: "Unsupported operator: \(op)")
        default:
            throw StoreError(.badRequest, error: "invalid_operator", reason: "Invalid operator: \(op)")
        }
    }
}

/// CouchDB's `bad_arg` error (a 400).
private func badArgument(_ op: String, _ argument: JSON) -> StoreError {
    StoreError(.badRequest, error: "bad_arg", reason: "Bad argument for operator \(op): \(argument.serialized())")
}

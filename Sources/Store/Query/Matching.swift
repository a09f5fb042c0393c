import JSON

/// How a normalized selector decides, following CouchDB's `mango_selector:match`.
extension Clause {
    /// Whether `value` satisfies the clause. An empty `$and` or `$or` matches.
    func matches(_ value: JSON) -> Bool {
        switch self {
        case .and(let clauses): clauses.allSatisfy { $0.matches(value) }
        case .or(let clauses): clauses.isEmpty || clauses.contains { $0.matches(value) }
        case .nor(let clauses): !clauses.contains { $0.matches(value) }
        case .not(let clause): !clause.matches(value)
        case .field(let path, let condition):
            switch path.lookup(in: value) {
            case .found(let found): condition.matches(found, rawOrder: path.name == "_id")
            case .missing: condition.isExistsFalse
            case .badPath: false
            }
        }
    }
}

extension Condition {
    /// Whether the field's `value` satisfies the condition. `rawOrder` compares
    /// by CouchDB's raw (Erlang term) order instead of collation, which CouchDB
    /// does for `_id`.
    func matches(_ value: JSON, rawOrder: Bool = false) -> Bool {
        func order(_ argument: JSON) -> Int {
            rawOrder ? RawOrder.compare(value, argument) : Collation.compare(value, argument)
        }
        func equal(_ a: JSON, _ b: JSON) -> Bool {
            (rawOrder ? RawOrder.compare(a, b) : Collation.compare(a, b)) == 0
        }
        switch self {
        case .eq(let argument): return order(argument) == 0
        case .ne(let argument): return order(argument) != 0
        case .lt(let argument): return order(argument) < 0
        case .lte(let argument): return order(argument) <= 0
        case .gt(let argument): return order(argument) > 0
        case .gte(let argument): return order(argument) >= 0
        case .in(let arguments):
            // An array field matches when any element is one of the arguments.
            if case .array(let elements) = value {
                return arguments.contains { argument in elements.contains { equal($0, argument) } }
            }
            return arguments.contains { equal(value, $0) }
        case .nin(let arguments):
            if case .array(let elements) = value {
                return !arguments.contains { argument in elements.contains { equal($0, argument) } }
            }
            return !arguments.contains { equal(value, $0) }
        case .exists(let exists):
            return exists
        case .type(let name):
            return name == Self.typeName(of: value)
        case .mod(let divisor, let remainder):
            guard let dividend = value.intValue else { return false }
            return dividend.remainderReportingOverflow(dividingBy: divisor).partialValue == remainder
        case .regex(let pattern):
            guard case .string(let string) = value else { return false }
            return pattern.matches(string)
        case .beginsWith(let prefix):
            guard case .string(let string) = value else { return false }
            return string.unicodeScalars.starts(with: prefix.unicodeScalars)
        case .size(let size):
            guard case .array(let elements) = value else { return false }
            return elements.count == size
        case .all(let arguments):
            // `[]` matches nothing; `[[…]]` also matches that very array.
            guard !arguments.isEmpty, case .array(let elements) = value else { return false }
            if arguments.count == 1, case .array = arguments[0], RawOrder.identical(arguments[0], value) { return true }
            return arguments.allSatisfy { argument in elements.contains { RawOrder.identical($0, argument) } }
        case .elemMatch(let clause):
            guard case .array(let elements) = value else { return false }
            return elements.contains { clause.matches($0) }
        case .allMatch(let clause):
            guard case .array(let elements) = value, !elements.isEmpty else { return false }
            return elements.allSatisfy { clause.matches($0) }
        case .keyMapMatch(let clause):
            guard case .object(let object) = value else { return false }
            return object.keys.contains { clause.matches(.string($0)) }
        case .not(let condition):
            return !condition.matches(value, rawOrder: rawOrder)
        }
    }

    /// The name `$type` uses for the value's JSON type.
    static func typeName(of value: JSON) -> String {
        switch value {
        case .null: "null"
        case .bool: "boolean"
        case .number, .bigInteger: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

/// CouchDB's raw ordering of JSON as Erlang terms: numbers < `false` < `null` <
/// `true` < objects < arrays < strings, strings by their UTF-8 bytes. CouchDB
/// compares `_id` this way in selectors, and `$all` tests membership by exact
/// term equality.
enum RawOrder {
    static func compare(_ a: JSON, _ b: JSON) -> Int {
        let rankA = rank(a), rankB = rank(b)
        if rankA != rankB { return rankA < rankB ? -1 : 1 }
        switch (a, b) {
        case (.number, .number), (.number, .bigInteger), (.bigInteger, .number), (.bigInteger, .bigInteger):
            let x = a.doubleValue ?? 0, y = b.doubleValue ?? 0
            return x < y ? -1 : (x > y ? 1 : 0)
        case (.string(let x), .string(let y)):
            return lexicographic(Array(x.utf8), Array(y.utf8)) { $0 < $1 ? -1 : ($0 > $1 ? 1 : 0) }
        case (.array(let x), .array(let y)):
            return lexicographic(x, y, compare)
        case (.object(let x), .object(let y)):
            // An object is a one-tuple holding its member list; members are
            // {Key, Value} pairs, compared key first.
            return lexicographic(x.members, y.members) { left, right in
                let keys = compare(.string(left.key), .string(right.key))
                return keys != 0 ? keys : compare(left.value, right.value)
            }
        default:
            return 0
        }
    }

    /// Exact equality of terms: strings byte for byte, objects with members in the same order.
    static func identical(_ a: JSON, _ b: JSON) -> Bool { compare(a, b) == 0 }

    private static func rank(_ value: JSON) -> Int {
        switch value {
        case .number, .bigInteger: 0
        case .bool(false): 1
        case .null: 2
        case .bool(true): 3
        case .object: 4
        case .array: 5
        case .string: 6
        }
    }

    private static func lexicographic<T>(_ a: [T], _ b: [T], _ compare: (T, T) -> Int) -> Int {
        for (x, y) in zip(a, b) {
            let order = compare(x, y)
            if order != 0 { return order }
        }
        return a.count < b.count ? -1 : (a.count > b.count ? 1 : 0)
    }
}

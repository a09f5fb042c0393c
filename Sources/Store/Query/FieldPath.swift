import JSON

/// A dotted field name such as `"address.city"` or `"tags.0"`, split into its
/// steps. `\.` stands for a dot inside a name, as in `"domain\.com"`.
struct FieldPath: Sendable, Hashable {
    /// The member names (or array indices) to follow; empty for the value itself.
    let steps: [String]
    /// The name as written, for messages and CouchDB's `_id` rule.
    let name: String

    /// What following a path through a document finds.
    enum Lookup {
        case found(JSON)
        /// An object on the way lacks the member.
        case missing
        /// The path runs into a scalar, or into an array with a step that is not
        /// a valid index.
        case badPath
    }

    /// Parses `name`; the empty name is the value itself.
    init(_ name: String) throws(StoreError) {
        self.name = name
        guard !name.isEmpty else {
            steps = []
            return
        }
        var steps: [String] = []
        var current = ""
        var escaped = false
        for character in name.unicodeScalars {
            if character == "\\" {
                escaped = true  // every backslash is dropped; one before a dot keeps the dot
                continue
            }
            if character == ".", !escaped {
                steps.append(current)
                current = ""
            } else {
                current.unicodeScalars.append(character)
            }
            escaped = false
        }
        steps.append(current)
        if steps.contains(where: \.isEmpty) {
            throw StoreError(.badRequest, error: "invalid_selector", reason: "Invalid field name: \(name)")
        }
        self.steps = steps
    }

    /// Follows the path through `value`. A step that is a decimal integer indexes
    /// an array.
    func lookup(in value: JSON) -> Lookup {
        var current = value
        for step in steps {
            switch current {
            case .object(let object):
                guard let member = object[step] else { return .missing }
                current = member
            case .array(let elements):
                guard let index = Self.index(step), index >= 0, index < elements.count else { return .badPath }
                current = elements[index]
            default:
                return .badPath
            }
        }
        return .found(current)
    }

    /// An array index as Erlang's `list_to_integer` reads one: optional sign, digits.
    private static func index(_ step: String) -> Int? {
        var digits = Substring(step)
        var negative = false
        if let sign = digits.first, sign == "+" || sign == "-" {
            negative = sign == "-"
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(digits) else { return nil }
        return negative ? -value : value
    }
}

/// A JSON value: the body of every document, exactly as CouchDB models it.
///
/// Numbers are IEEE doubles, as in JavaScript and CouchDB's own views, except
/// integers a double cannot hold exactly, which keep their text (CouchDB keeps
/// integers exact); objects keep their members in the order they were written.
///
/// ```swift
/// let doc = try JSON(parsing: #"{"type":"note","tags":["a","b"]}"#)
/// doc["type"]            // .string("note")
/// doc.serialized()       // the same text, keys in their original order
/// ```
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    /// An integer beyond ±2^53, kept as its JSON text so that it is written back exactly.
    case bigInteger(String)
    case string(String)
    case array([JSON])
    case object(Object)

    /// An ordered JSON object. Lookup by key is linear, which beats hashing for
    /// the few dozen members a document usually has.
    public struct Object: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
        /// The members in document order.
        public private(set) var members: [(key: String, value: JSON)]

        /// An empty object.
        public init() { members = [] }

        /// An object with the given members, in order. A repeated key keeps its last value.
        public init(_ members: [(key: String, value: JSON)]) {
            self.members = []
            self.members.reserveCapacity(members.count)
            for (key, value) in members { self[key] = value }
        }

        public init(dictionaryLiteral elements: (String, JSON)...) {
            self.init(elements.map { (key: $0.0, value: $0.1) })
        }

        /// Members known to have distinct keys, unchecked: for Store, which builds them.
        package init(uniqueMembers: [(key: String, value: JSON)]) { members = uniqueMembers }

        /// The number of members.
        public var count: Int { members.count }
        /// Whether the object has no members.
        public var isEmpty: Bool { members.isEmpty }
        /// The keys in document order.
        public var keys: [String] { members.map(\.key) }

        /// The value for `key`; setting `nil` removes the member.
        public subscript(key: String) -> JSON? {
            get {
                for member in members where member.key == key { return member.value }
                return nil
            }
            set {
                if let index = members.firstIndex(where: { $0.key == key }) {
                    if let newValue { members[index].value = newValue } else { members.remove(at: index) }
                } else if let newValue {
                    members.append((key, newValue))
                }
            }
        }

        /// Removes and returns the value for `key`.
        @discardableResult
        public mutating func removeValue(forKey key: String) -> JSON? {
            guard let index = members.firstIndex(where: { $0.key == key }) else { return nil }
            return members.remove(at: index).value
        }

        /// Removes the members for which `shouldRemove` is true.
        public mutating func removeAll(where shouldRemove: ((key: String, value: JSON)) -> Bool) {
            members.removeAll(where: shouldRemove)
        }

        public func makeIterator() -> IndexingIterator<[(key: String, value: JSON)]> {
            members.makeIterator()
        }

        public static func == (lhs: Object, rhs: Object) -> Bool {
            lhs.members.count == rhs.members.count
                && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(members.count)
            for (key, value) in members {
                hasher.combine(key)
                hasher.combine(value)
            }
        }
    }
}

extension JSON {
    /// The member `key` of an object; `nil` for anything else.
    public subscript(key: String) -> JSON? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The string, if this is one.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number, if this is one (a big integer as its nearest double).
    public var doubleValue: Double? {
        switch self {
        case .number(let value): value
        case .bigInteger(let text): Double(text)
        default: nil
        }
    }

    /// The number as an integer, if it is one with no fraction that fits an `Int`
    /// (a big integer's exact digits included).
    public var intValue: Int? {
        switch self {
        case .number(let value): Int(exactly: value)
        case .bigInteger(let text): Int(text)
        default: nil
        }
    }

    /// The number as a count, if it is a whole number from 0 to 2^53 (the integers
    /// JSON carries exactly): arithmetic on counts a peer sends cannot overflow.
    public var countValue: Int? {
        guard case .number(let value) = self, value >= 0, value <= 0x1p53 else { return nil }
        return Int(exactly: value)
    }

    /// The boolean, if this is one.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: Object? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Object(elements.map { (key: $0.0, value: $0.1) }))
    }
    public init(nilLiteral: ()) { self = .null }
}

extension JSON: CustomStringConvertible {
    public var description: String { serialized() }
}

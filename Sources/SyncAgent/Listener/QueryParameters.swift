import FoundationEssentials
import JSON
import Store

/// The query string of a request, percent-decoded, with CouchDB's value forms:
/// booleans, integers and JSON-encoded values such as `open_revs=["1-a"]`.
struct QueryParameters: Sendable {
    private var pairs: [(name: String, value: String)] = []

    init(_ query: String?) {
        guard let query, !query.isEmpty else { return }
        for item in query.split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in
                PathEncoding.decode(String(text).replacing("+", with: " ")) ?? String(text)
            }
            pairs.append((decode(parts[0]), parts.count > 1 ? decode(parts[1]) : ""))
        }
    }

    /// Every parameter as CouchDB gives a filter function's `req.query`: name to value, the last of repeats.
    var json: JSON {
        var object = JSON.Object()
        for pair in pairs { object[pair.name] = .string(pair.value) }
        return .object(object)
    }

    /// Every parameter in the order given, repeats included.
    var all: [(name: String, value: String)] { pairs }

    /// The last value given for `name`.
    subscript(name: String) -> String? { pairs.last { $0.name == name }?.value }

    /// Whether `name` is present.
    func has(_ name: String) -> Bool { pairs.contains { $0.name == name } }

    /// `true`/`false`; 400 for anything else.
    func bool(_ name: String, default value: Bool = false) throws(CouchError) -> Bool {
        guard let text = self[name] else { return value }
        switch text {
        case "true": return true
        case "false": return false
        default: throw .badRequest("Invalid boolean parameter: \"\(name)\"")
        }
    }

    /// The largest count a request can ask for; larger ones mean as much. Counts
    /// (`limit`, `skip`, milliseconds) stay this small so sums of them cannot overflow.
    static let largestCount = 1 << 53

    /// A non-negative integer of decimal digits, at most ``largestCount``; 400 otherwise.
    /// Every integer of the query is read here.
    func integer(_ name: String) throws(CouchError) -> Int? {
        guard let text = self[name] else { return nil }
        guard let value = Self.count(text) else {
            throw .badRequest("Invalid value for integer parameter: \"\(name)\"")
        }
        return value
    }

    /// Milliseconds, at least 10 ms and at most `ceiling` (a request's waits are bounded).
    func milliseconds(_ name: String, ceiling: Duration) throws(CouchError) -> Duration? {
        guard let milliseconds = try integer(name) else { return nil }
        return min(max(.milliseconds(milliseconds), .milliseconds(10)), ceiling)
    }

    /// Decimal digits as a count, ``largestCount`` when larger; `nil` for anything but digits.
    static func count(_ text: some StringProtocol) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return min(Int(text) ?? largestCount, largestCount)
    }

    /// A JSON-encoded value; 400 when it does not parse.
    func json(_ name: String) throws(CouchError) -> JSON? {
        guard let text = self[name] else { return nil }
        do {
            return try JSON(parsing: text)
        } catch {
            throw .badRequest("Invalid JSON in parameter \"\(name)\"")
        }
    }

    /// A JSON-encoded string (such as `startkey="a"`).
    func jsonString(_ name: String) throws(CouchError) -> String? {
        guard let value = try json(name) else { return nil }
        guard case .string(let text) = value else { throw .badRequest("Parameter \"\(name)\" must be a JSON string") }
        return text
    }

    /// A revision id; 400 when malformed.
    func revision(_ name: String) throws(CouchError) -> RevisionID? {
        guard let text = self[name] else { return nil }
        guard let revision = RevisionID(text) else { throw .badRequest("Invalid rev format") }
        return revision
    }

    /// A JSON array of revision ids (`open_revs`, `atts_since`).
    func revisions(_ name: String) throws(CouchError) -> [RevisionID]? {
        guard let value = try json(name) else { return nil }
        return try Self.revisions(value, name: name)
    }

    static func revisions(_ value: JSON, name: String) throws(CouchError) -> [RevisionID] {
        guard case .array(let items) = value else { throw .badRequest("\(name) must be a JSON array of revisions") }
        var revisions: [RevisionID] = []
        for item in items {
            guard let text = item.stringValue, let revision = RevisionID(text) else { throw .badRequest("Invalid rev format") }
            revisions.append(revision)
        }
        return revisions
    }
}

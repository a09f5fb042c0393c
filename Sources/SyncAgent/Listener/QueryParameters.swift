import Foundation
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
                String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
            }
            pairs.append((decode(parts[0]), parts.count > 1 ? decode(parts[1]) : ""))
        }
    }

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

    /// A non-negative integer; 400 otherwise.
    func integer(_ name: String) throws(CouchError) -> Int? {
        guard let text = self[name] else { return nil }
        guard let value = Int(text), value >= 0 else {
            throw .badRequest("Invalid value for integer parameter: \"\(name)\"")
        }
        return value
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

import JSON
import Store

/// CouchDB's database security object: `{"admins": {"names": [], "roles": []},
/// "members": {"names": [], "roles": []}}`.
enum SecurityObject {
    /// What a database without one answers, as CouchDB 3 does: server admins only.
    static let adminOnly: JSON = ["admins": ["roles": ["_admin"]], "members": ["roles": ["_admin"]]]

    /// The names and roles of `key` (`admins` or `members`); `nil` when they are
    /// not arrays of strings.
    static func lists(_ security: JSON, _ key: String) -> (names: [String], roles: [String])? {
        guard let group = security[key] else { return ([], []) }
        guard case .object = group else { return nil }
        func strings(_ field: String) -> [String]? {
            guard let value = group[field] else { return [] }
            guard let array = value.arrayValue else { return nil }
            let texts = array.compactMap(\.stringValue)
            return texts.count == array.count ? texts : nil
        }
        guard let names = strings("names"), let roles = strings("roles") else { return nil }
        return (names, roles)
    }

    /// Checks a security object sent to `PUT /{db}/_security`.
    static func validate(_ security: JSON) throws(CouchError) {
        guard case .object = security, lists(security, "admins") != nil, lists(security, "members") != nil else {
            throw CouchError.badRequest("names and roles must be arrays of strings")
        }
    }
}

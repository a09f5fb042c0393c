import JSON

/// What runs a database's design documents' functions, as Couchbase Lite's database runs its
/// validation and filter blocks. The store keeps design documents as data and runs no code:
/// the owner of a catalog (the agent, through its query servers) sets one in
/// ``Database/Options/designFunctions``. Every write of a document
/// (``Database/bulkDocs(_:newEdits:relayed:author:)``: local, `_bulk_docs`, replicated) is then
/// judged by `validate_doc_update` before it is applied, and change feeds can be filtered by
/// a design document's filter functions (``Database/filter(_:by:request:)``), as in CouchDB.
public protocol DesignFunctions: Sendable {
    /// One verdict per update, in order: `nil` when every design document's function accepts it,
    /// else the refusal (403 `forbidden`, 401 `unauthorized`, or the function's own failure).
    func validate(_ updates: [ProposedUpdate], by designs: [DesignDocument], context: ValidationContext) async -> [StoreError?]

    /// Whether each document passes `function` of `design`, in order; throws the function's failure.
    func filter(_ documents: [JSON], by function: DesignFilter, of design: DesignDocument, request: JSON) async throws(StoreError) -> [Bool]

    /// Maps each document by every view of `group`, in order: for each document, for each
    /// view, the rows it emits. A function that throws for one document emits nothing for
    /// it (CouchDB logs it and goes on); a function that cannot run throws.
    func map(_ documents: [JSON], by group: ViewGroup) async throws(StoreError) -> [[[ViewEmission]]]

    /// Runs `source`, a view's reduce function, once per call: on rows (`reduce(keys,
    /// values, false)`) or on what earlier calls returned (`rereduce`).
    func reduce(_ calls: [ReduceCall], by source: String, of group: ViewGroup) async throws(StoreError) -> [JSON]
}

extension DesignFunctions {
    /// Views cannot be built where only validation and filters run.
    public func map(_ documents: [JSON], by group: ViewGroup) async throws(StoreError) -> [[[ViewEmission]]] {
        throw StoreError(.internal, error: "not_implemented", reason: "These design functions run no views.")
    }

    public func reduce(_ calls: [ReduceCall], by source: String, of group: ViewGroup) async throws(StoreError) -> [JSON] {
        throw StoreError(.internal, error: "not_implemented", reason: "These design functions run no reduce functions.")
    }
}

/// One row a map function emits: `emit(key, value)`.
public struct ViewEmission: Sendable, Hashable {
    public let key: JSON
    public let value: JSON

    /// The row `emit(key, value)` makes.
    public init(key: JSON, value: JSON) {
        self.key = key
        self.value = value
    }
}

/// One call of a reduce function: its `keys` (`[key, id]` pairs) and `values`, or, for
/// `rereduce`, `keys` `nil` and the values earlier calls returned.
public struct ReduceCall: Sendable {
    public let keys: [JSON]?
    public let values: [JSON]

    /// A call on rows (`keys` given) or a rereduce (`keys` nil).
    public init(keys: [JSON]?, values: [JSON]) {
        self.keys = keys
        self.values = values
    }
}

/// A design document's function a change feed is filtered by.
public enum DesignFilter: Sendable, Hashable {
    /// `filters.NAME`, called as `filter(doc, req)` (CouchDB's `filter=DESIGN/NAME`).
    case filter(String)
    /// `views.NAME.map`: a document passes when it emits a row (CouchDB's `filter=_view&view=DESIGN/NAME`).
    case view(String)

    /// The function's source in `design`, `nil` when it has none.
    func source(in design: JSON) -> JSON? {
        switch self {
        case .filter(let name): design["filters"]?[name]
        case .view(let name): design["views"]?[name]?["map"]
        }
    }

    /// The function's name, as CouchDB's error for a missing one says it.
    var name: String {
        switch self {
        case .filter(let name), .view(let name): name
        }
    }
}

/// A design document as stored (its winning revision): what a query server is sent before it runs one of its functions.
public struct DesignDocument: Sendable, Hashable {
    /// `_design/...`.
    public let id: String
    /// Its revision: what a query server compares to know it holds this version.
    public let revision: String
    /// The whole design document (its functions, and the modules `require` reads).
    public let document: JSON

    /// A design document by id and revision.
    public init(id: String, revision: String, document: JSON) {
        self.id = id
        self.revision = revision
        self.document = document
    }
}

/// One write to judge: CouchDB's `newDoc` and `oldDoc`.
public struct ProposedUpdate: Sendable {
    /// The document as written: `_id`, `_rev` (the parent's, for a new edit), `_deleted`,
    /// `_revisions` when replicated, the body, `_attachments` as stubs.
    public let newDocument: JSON
    /// The revision it replaces, `nil` for a new document or a new branch.
    public let oldDocument: JSON?

    /// A write of `newDocument` over `oldDocument`.
    public init(newDocument: JSON, oldDocument: JSON?) {
        self.newDocument = newDocument
        self.oldDocument = oldDocument
    }
}

/// Who writes, and the database's rules: CouchDB's `userCtx` and `secObj`.
public struct ValidationContext: Sendable {
    /// `{"db": name, "name": user or null, "roles": [...]}`.
    public let userContext: JSON
    /// The database's security object, `{}` when none was set.
    public let security: JSON

    /// A context of `userContext` and `security`.
    public init(userContext: JSON, security: JSON) {
        self.userContext = userContext
        self.security = security
    }
}

/// Who a write is made for, as validation functions see it (`userCtx.name`, `userCtx.roles`).
public struct WriteAuthor: Sendable, Hashable {
    /// The user's name; `nil` for the server itself or an anonymous client.
    public let name: String?
    /// The user's roles; `_admin` for a server admin.
    public let roles: [String]

    /// An author by name and roles.
    public init(name: String?, roles: [String]) {
        self.name = name
        self.roles = roles
    }

    /// The server acting for itself (an embedding program, the agent's own writes): a server admin.
    public static let server = WriteAuthor(name: nil, roles: ["_admin"])

    /// CouchDB's `userCtx` for a write to database `database`: `{"db", "name", "roles"}`.
    public func userContext(database: String) -> JSON {
        ["db": .string(database), "name": name.map(JSON.string) ?? .null, "roles": .array(roles.map(JSON.string))]
    }

    /// Whether the author administers the database: a server admin, or named in the security
    /// object's `admins` by name or role. Such authors' design-document writes are not judged.
    func administers(under security: JSON) -> Bool {
        if roles.contains("_admin") { return true }
        let admins = security["admins"]
        if let name, admins?["names"]?.arrayValue?.contains(.string(name)) == true { return true }
        let adminRoles = admins?["roles"]?.arrayValue ?? []
        return roles.contains { adminRoles.contains(.string($0)) }
    }
}

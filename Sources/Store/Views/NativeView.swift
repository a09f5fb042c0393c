import Crypto
import JSON
import Locking

/// A view whose functions are Swift closures, for a program that embeds the store (Couchbase
/// Lite's `setMapBlock(_:version:)`): indexed and queried as a design document's view is, in
/// the same tables, by ``Database/defineView(_:)`` and ``Database/queryView(named:_:)``. The
/// index is kept across restarts and rebuilt when `version` changes, so change the version
/// whenever the map (or reduce) computes something new.
public struct NativeView: Sendable {
    /// How rows are reduced: a built-in (`_count`, `_sum`, `_stats`, `_approx_count_distinct`)
    /// or a closure called as CouchDB calls a reduce function: `(keys, values, rereduce)`, with
    /// `keys` the `[key, id]` pairs, `nil` when rereducing.
    public enum Reduce: Sendable {
        case builtin(String)
        case function(@Sendable (_ keys: [JSON]?, _ values: [JSON], _ rereduce: Bool) throws -> JSON)
    }

    public let name: String
    public let version: String
    public let map: @Sendable (JSON) -> [ViewEmission]
    public let reduce: Reduce?

    /// A view named `name` whose rows `map` emits for each live document.
    public init(name: String, version: String, map: @escaping @Sendable (JSON) -> [ViewEmission], reduce: Reduce? = nil) {
        self.name = name
        self.version = version
        self.map = map
        self.reduce = reduce
    }

    /// The group it is indexed as: one view, known by its name and version.
    var group: ViewGroup {
        var md5 = Insecure.MD5()
        md5.update(data: JSON.array(["native", .string(name), .string(version)]).serializedBytes())
        let reduceName: String? = switch reduce {
        case .builtin(let name)?: name
        case .function?: "native"
        case nil: nil
        }
        return ViewGroup(native: self, id: "_native/" + name, view: ViewGroup.View(name: name, map: "", reduce: reduceName),
                         signature: Hex.string(md5.finalize()))
    }
}

extension Database {
    /// Defines (or redefines) a native view; the index of an earlier version is dropped.
    public func defineView(_ view: NativeView) async throws(StoreError) {
        let group = view.group
        nativeViews.withLock { $0[view.name] = view }
        try await write { context in try ViewIndex.drop(design: group.design.id, except: group.signature, in: context.connection) }
    }

    /// Answers a query of the native view `name`, as ``queryView(design:view:_:)`` answers one of a design document.
    public func queryView(named name: String, _ query: ViewQuery) async throws(StoreError) -> ViewResult {
        guard let view = nativeViews.withLock({ $0[name] }) else { throw StoreError.notFound("missing_named_view") }
        return try await queryView(view.group, view: name, query)
    }
}

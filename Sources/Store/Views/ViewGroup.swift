import Crypto
import JSON

/// The views of one design document, indexed together as CouchDB indexes them: one pass over
/// the database maps each document by every view's function, and the index is known by a
/// signature of what the views compute (their functions, language, library and options), so
/// an edit that changes none of those keeps the index, and one that does starts a new one.
public struct ViewGroup: Sendable {
    /// One view: a map function and an optional reduce (JavaScript source, or a built-in such as `_count`).
    public struct View: Sendable, Hashable {
        public let name: String
        public let map: String
        public let reduce: String?
    }

    /// The design document, as query servers are sent it.
    public let design: DesignDocument
    /// `javascript` unless the design document says otherwise.
    public let language: String
    /// The views, in name order: a view's place is its number in the index.
    public let views: [View]
    /// `views.lib`: the modules map functions `require`.
    public let library: JSON?
    /// `options.include_design`: design documents are mapped too.
    public let includeDesign: Bool
    /// What the index is known by: an MD5 of everything that changes what it holds.
    public let signature: String
    /// The Swift closures that compute the view, for a native view (no JavaScript).
    let native: NativeView?

    /// The views of `design`; `nil` when it defines none (a design document of only
    /// filters, validation or Mango indexes).
    public init?(design: DesignDocument) {
        guard case .object(let views)? = design.document["views"] else { return nil }
        var defined: [View] = []
        for (name, view) in views.members where name != "lib" {
            guard let map = view["map"]?.stringValue else { continue }
            defined.append(View(name: name, map: map, reduce: view["reduce"]?.stringValue))
        }
        guard !defined.isEmpty else { return nil }
        self.design = design
        self.views = defined.sorted { $0.name < $1.name }
        language = design.document["language"]?.stringValue ?? "javascript"
        library = views["lib"]
        includeDesign = design.document["options"]?["include_design"] == true
        var md5 = Insecure.MD5()
        let described: JSON = [
            .string(language), library ?? .null, .bool(includeDesign),
            .array(self.views.map { [.string($0.name), .string($0.map), $0.reduce.map(JSON.string) ?? .null] }),
        ]
        md5.update(data: described.serializedBytes())
        signature = Hex.string(md5.finalize())
        native = nil
    }

    /// The group of a native view.
    init(native: NativeView, id: String, view: View, signature: String) {
        design = DesignDocument(id: id, revision: native.version, document: [:])
        language = "swift"
        views = [view]
        library = nil
        includeDesign = false
        self.signature = signature
        self.native = native
    }

    /// The view named `name`, with its number in the index.
    public func view(named name: String) -> (number: Int, view: View)? {
        views.firstIndex { $0.name == name }.map { ($0, views[$0]) }
    }

    /// Whether documents with `id` are mapped: design documents only with `include_design`,
    /// `_local` documents never.
    func maps(_ id: String) -> Bool {
        id.hasPrefix("_design/") ? includeDesign : true
    }
}

import FoundationEssentials
import HTTPTypes
import HummingbirdCore
import JSON
import NIOCore
import Store

/// A `_changes` request: which feed, from where, which changes, how to
/// render them, and how long to wait.
struct ChangesRequest: Sendable {
    /// CouchDB's feed types.
    enum Feed: String, Sendable {
        case normal, longpoll, continuous, eventsource
    }

    var feed = Feed.normal
    var options = ChangesOptions()
    /// Add `_conflicts` to included documents.
    var conflicts = false
    /// Design documents' filter functions the changes must pass (`filter=DESIGN/NAME`,
    /// `filter=_view&view=DESIGN/NAME`, and a push filter offered to the peer asking), each
    /// with CouchDB's `req` object it is called with.
    var designFilters: [(function: DesignFilter, design: String, request: JSON)] = []
    /// Send a newline (an event for eventsource) this often while idle.
    var heartbeat: Duration?
    /// End a waiting feed after this long without changes.
    var timeout = longestWait
    /// The longest `timeout` and `heartbeat` (CouchDB's default `changes_timeout`).
    static let longestWait = Duration.seconds(60)

    /// Reads the query and, for POST, the body (`doc_ids`, `selector`).
    init(_ exchange: inout Exchange, database: Database, bodyLimit: Int, offered: ReplicationFilter? = nil) async throws {
        let query = exchange.query
        if let name = query["feed"] {
            guard let feed = Feed(rawValue: name) else { throw CouchError.badRequest("Supported `feed` types: normal, continuous, longpoll, eventsource") }
            self.feed = feed
        }
        var since = query["since"] ?? exchange.request.headers[HTTPField.Name("Last-Event-ID")!]
        if since == "now" {
            options.since = try database.lastSequence()
            since = nil
        }
        if let since {
            options.since = try Self.sequence(since)
            // A sequence this database never issued would, saved as a checkpoint,
            // skip every change until the database caught up: CouchDB 3.5 refuses it.
            if options.since > (try database.lastSequence()) {
                throw CouchError.badRequest("Malformed sequence supplied in 'since' parameter.")
            }
        }
        options.limit = try query.integer("limit")
        options.descending = try query.bool("descending")
        options.includeDocuments = try query.bool("include_docs")
        // syncd's own: a member reading another's first-hand changes (CouchDB ignores it, as older syncd do).
        options.firstHandOnly = try query.bool(ChangeFeedRequest.firstHandParameter)
        conflicts = try query.bool("conflicts")
        if let style = query["style"] {
            guard style == "all_docs" || style == "main_only" else { throw CouchError.badRequest("Supported `style` values: main_only, all_docs") }
            options.allLeaves = style == "all_docs"
        }
        switch query["heartbeat"] {
        case nil, "false": break
        case "true": heartbeat = Self.longestWait
        case let value?:
            guard let milliseconds = QueryParameters.count(value), milliseconds > 0 else {
                throw CouchError.badRequest("Invalid heartbeat value. Expecting a positive integer value or 'true'.")
            }
            heartbeat = try query.milliseconds("heartbeat", ceiling: Self.longestWait)
        }
        // CouchDB caps `timeout` at its `changes_timeout` (60 s).
        if let wait = try query.milliseconds("timeout", ceiling: Self.longestWait) { timeout = wait }

        var body: JSON.Object = [:]
        if exchange.request.method == .post {
            let bytes = try await exchange.readBody(limit: bodyLimit)
            if bytes.readableBytes > 0 {
                if let type = exchange.mediaType, type != "application/json" { throw CouchError.notJSON }
                let parsed: JSON
                do { parsed = try JSON(parsing: bytes.readableBytesView) } catch { throw CouchError.invalidJSON(error) }
                guard case .object(let object) = parsed else { throw CouchError.invalidJSON() }
                body = object
            }
        }
        switch query["filter"] {
        case nil:
            break
        case "_doc_ids":
            let ids = try body["doc_ids"] ?? query.json("doc_ids")
            guard case .array(let items)? = ids else { throw CouchError.badRequest("`doc_ids` filter parameter is not a list of doc ids.") }
            options.documentIDs = Set(try items.map { item throws(CouchError) in
                guard let id = item.stringValue else { throw .badRequest("`doc_ids` filter parameter is not a list of doc ids.") }
                return id
            })
        case "_selector":
            guard let selector = body["selector"] else { throw CouchError.badRequest("Selector must be specified in POST payload") }
            options.selector = try Selector(selector)
        case "_design":
            options.designOnly = true
        case "_view":
            guard let view = query["view"], !view.isEmpty else { throw CouchError.badRequest("`view` filter parameter is not provided.") }
            let parts = view.split(separator: "/")
            guard parts.count == 2 else { throw CouchError.badRequest("`view` must be of the form `designname/viewname`") }
            designFilters.append((.view(String(parts[1])), "_design/" + parts[0], .null))
        case let name?:
            let parts = name.split(separator: "/")
            guard parts.count == 2 else { throw CouchError.badRequest("`filter` must be of the form `designname/filtername`") }
            let request = Self.filterRequest(exchange, database: database, body: body)
            designFilters.append((.filter(String(parts[1])), "_design/" + parts[0], request))
        }
        if let offered = offered { try narrow(to: offered, database: database, author: exchange.principal.author) }
    }

    /// CouchDB's `req` for a filter function: the request's query, method, path, headers
    /// (credentials left out), body, peer address, and who asks (`userCtx`, `secObj`).
    private static func filterRequest(_ exchange: Exchange, database: Database, body: JSON.Object) -> JSON {
        var headers = JSON.Object()
        for field in exchange.request.headers where field.name != .authorization && field.name != .cookie {
            headers[field.name.canonicalName] = .string(field.value)
        }
        let segments = exchange.request.uri.path.split(separator: "/").map { JSON.string(PathEncoding.decode(String($0)) ?? String($0)) }
        return LocalEndpoint.filterRequest(
            database, query: exchange.query.json.objectValue ?? [:], author: exchange.principal.author,
            method: exchange.request.method.rawValue, path: segments, rawPath: exchange.request.uri.string, headers: headers,
            body: body.isEmpty ? "undefined" : .string(JSON.object(body).serialized()), peer: exchange.context.clientAddress)
    }

    /// Narrows the feed to what this node offers the peer asking (its push filter).
    private mutating func narrow(to filter: ReplicationFilter, database: Database, author: WriteAuthor) throws {
        switch filter {
        case .documentIDs(let ids):
            options.documentIDs = options.documentIDs.map { $0.intersection(ids) } ?? Set(ids)
        case .selector(let selector):
            options.selector = try Selector(options.selector.map { .object(["$and": .array([$0.json, selector])]) } ?? selector)
        case .function(let name, let parameters):
            guard let (design, function) = ReplicationFilter.designFunction(name) else { return }
            designFilters.append((.filter(function), design, LocalEndpoint.filterRequest(database, query: parameters, author: author)))
        }
    }

    /// A sequence as a client sends it back: a number, a numeric string
    /// (quoted or not), or CouchDB's `N-opaque` form, of which N is used.
    static func sequence(_ text: String) throws(CouchError) -> UInt64 {
        var value = Substring(text)
        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = value.dropFirst().dropLast() }
        if let dash = value.firstIndex(of: "-") { value = value[..<dash] }
        if let number = UInt64(value) { return number }
        if let number = Double(value), number >= 0, number < 1e18, number == number.rounded() { return UInt64(number) }
        throw .badRequest("Malformed sequence supplied in 'since' parameter.")
    }
}

/// One `_changes` result row, as CouchDB writes it:
/// `{"seq", "id", "changes": [{"rev"}], "deleted", "doc"}`.
enum ChangeRow {
    static func write(_ change: Change, conflicts: Bool, to output: inout [UInt8]) {
        output += Array(#"{"seq":"#.utf8)
        output += Array(String(change.sequence).utf8)
        output += Array(#","id":"#.utf8)
        JSON.writeString(change.id, to: &output)
        output += Array(#","changes":["#.utf8)
        for (index, revision) in change.revisions.enumerated() {
            output += Array((index == 0 ? #"{"rev":""# : #",{"rev":""#).utf8)
            output += Array(revision.description.utf8)
            output += Array(#""}"#.utf8)
        }
        output.append(UInt8(ascii: "]"))
        if change.deleted { output += Array(#","deleted":true"#.utf8) }
        if let document = change.document {
            output += Array(#","doc":"#.utf8)
            document.json(conflicts ? [.conflicts] : []).write(to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }
}

import FoundationEssentials
import Store

/// A CouchDB database URL split into what is sent and what is secret: the
/// server's base, the database name, and the user-info credentials that go
/// only into an `Authorization` header, never into logs or errors.
public struct RemoteURL: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    public let scheme: String
    /// Host name or address (IPv6 without brackets).
    public let host: String
    /// TCP port.
    public let port: Int
    /// Path prefix before the database (empty, or starting with `/`), for servers behind a proxy path.
    public let basePath: String
    /// The database name, decoded.
    public let database: String
    /// The user name and password from the URL, if any.
    public let credentials: (user: String, password: String)?

    /// Parses `http(s)://[user:password@]host[:port][/prefix]/database`.
    /// A password holding `/ ? # @` must have them percent-encoded; a URL with an `@`
    /// outside its user information is refused rather than guessed at.
    public init(_ text: String) throws(EndpointError) {
        func refuse(_ problem: String) -> EndpointError {
            EndpointError(status: 400, error: "bad_request", reason: "\(problem): \(Self.redact(text))", endpoint: "replication")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { throw refuse("not an http(s) URL (percent-encode / ? # and at signs in a user name or password)") }
        guard !(components.percentEncodedPath + (components.percentEncodedQuery ?? "") + (components.percentEncodedFragment ?? "")).contains("@")
        else { throw refuse("an at sign after the host (percent-encode / ? # and at signs in a user name or password)") }
        self.scheme = scheme
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.port = components.port ?? (scheme == "https" ? 443 : 80)
        let segments = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: true)
        guard let last = segments.last, let name = PathEncoding.decode(last), !name.isEmpty else {
            throw refuse("the URL names no database")
        }
        database = name
        basePath = segments.dropLast().map { "/" + $0 }.joined()
        if let user = components.user {
            credentials = (user, components.password ?? "")
        } else {
            credentials = nil
        }
    }

    /// The database `database` of the agent listening on the Unix socket at
    /// `socketPath` (its control socket): how commands reach a data directory
    /// that a running agent owns.
    public init(unixSocket socketPath: String, database: String) {
        scheme = "http+unix"
        host = socketPath
        port = 0
        basePath = ""
        self.database = database
        credentials = nil
    }

    /// Whether this is a database of the agent behind a Unix socket.
    public var isUnixSocket: Bool { scheme == "http+unix" }

    /// `scheme://host:port`, without credentials or path.
    public var origin: String {
        if isUnixSocket { return "http+unix://" + PathEncoding.segment(host) }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let defaultPort = scheme == "https" ? 443 : 80
        return "\(scheme)://\(hostPart)\(port == defaultPort ? "" : ":\(port)")"
    }

    /// The server's root URL, without credentials.
    public var serverURL: String { origin + basePath }

    /// The database's URL, without credentials: safe to log.
    public var description: String {
        isUnixSocket ? "local database \(database) (through the agent at \(host))" : serverURL + "/" + PathEncoding.segment(database)
    }

    /// Text with the user information of URLs in it hidden: from each `://` (or, without one,
    /// from the start of the word) to the last `@` after it becomes `***`. A password may hold
    /// `/ ? # @ :` and spaces, so no URL grammar decides where it ends: this hides too much
    /// rather than too little.
    public static func redact(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return text }
        let start: String.Index
        if let scheme = text[..<at].firstRange(of: "://") {
            start = scheme.upperBound
        } else {
            start = text[..<at].lastIndex(where: { $0.isWhitespace || $0 == "'" || $0 == "\"" }).map(text.index(after:)) ?? text.startIndex
        }
        return String(text[..<start]) + "***" + String(text[at...])
    }

    /// Same database URL and credentials.
    public static func == (lhs: RemoteURL, rhs: RemoteURL) -> Bool {
        lhs.description == rhs.description && lhs.credentials?.user == rhs.credentials?.user
            && lhs.credentials?.password == rhs.credentials?.password
    }

    /// Hashes the credential-free URL.
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }
}

/// Percent-encoding of URL path segments and query values.
enum PathEncoding {
    /// One path segment: everything but unreserved characters encoded as UTF-8 `%XX`, `/` included.
    static func segment(_ text: String) -> String {
        encode(text, keeping: isUnreserved)
    }

    /// Whether `byte` is an unreserved character of RFC 3986: an ASCII letter or digit, or `-._~`.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// `text` with every UTF-8 byte `kept` refuses written `%XX` (upper-case hex).
    static func encode(_ text: String, keeping kept: (UInt8) -> Bool) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if kept(byte) {
                encoded.append(byte)
            } else {
                encoded += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// `text` with each `%XX` decoded; `nil` for a `%` not followed by two hex digits or bytes
    /// that are not UTF-8, as Foundation's `removingPercentEncoding` answers.
    static func decode(_ text: some StringProtocol) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Hex.nibble), let low = iterator.next().flatMap(Hex.nibble) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// A document id as a path: `_design/` and `_local/` keep their slash, as CouchDB expects.
    static func documentID(_ id: String) -> String {
        for prefix in ["_design/", "_local/"] where id.hasPrefix(prefix) {
            return prefix + segment(String(id.dropFirst(prefix.count)))
        }
        return segment(id)
    }

    /// A query string from names and values.
    static func query(_ items: [(String, String)]) -> String {
        items.isEmpty ? "" : "?" + items.map { "\(segment($0.0))=\(segment($0.1))" }.joined(separator: "&")
    }
}

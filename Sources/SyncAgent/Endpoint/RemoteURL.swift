import FoundationEssentials

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

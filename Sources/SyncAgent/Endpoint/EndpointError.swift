import Store

/// Why a request to an endpoint failed, in CouchDB's terms: the HTTP status and
/// the `error` and `reason` of its JSON body. Messages never carry credentials.
public struct EndpointError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status, or 0 when no answer came (connection refused, reset, timed out).
    public let status: Int
    /// CouchDB's error name (`not_found`, `conflict`, `unauthorized`, ...), or `unreachable` / `cannot_connect`.
    public let error: String
    /// The reason given, or what went wrong.
    public let reason: String
    /// Which endpoint, credentials removed.
    public let endpoint: String

    /// An error from its parts.
    public init(status: Int, error: String, reason: String, endpoint: String) {
        self.status = status
        self.error = error
        self.reason = reason
        self.endpoint = endpoint
    }

    /// The endpoint could not be reached, or the connection broke.
    public static func unreachable(_ endpoint: String, _ reason: String) -> EndpointError {
        EndpointError(status: 0, error: "unreachable", reason: reason, endpoint: endpoint)
    }

    /// No connection could be made at all (refused, no route, host not found).
    public static func cannotConnect(_ endpoint: String, _ reason: String) -> EndpointError {
        EndpointError(status: 0, error: "cannot_connect", reason: reason, endpoint: endpoint)
    }

    /// The endpoint answered something that is not the CouchDB protocol.
    public static func badResponse(_ endpoint: String, _ reason: String) -> EndpointError {
        EndpointError(status: 502, error: "bad_response", reason: reason, endpoint: endpoint)
    }

    /// A store error of a local endpoint, with the status CouchDB would give it.
    public init(_ error: StoreError, endpoint: String) {
        self.init(status: error.kind.status, error: error.error, reason: error.reason, endpoint: endpoint)
    }

    /// No connection could be made (see ``cannotConnect(_:_:)``).
    public var isConnectFailure: Bool { error == "cannot_connect" }

    /// A write lost a race (409): re-read and retry.
    public var isConflict: Bool { status == 409 }

    /// The thing asked for does not exist (404).
    public var isNotFound: Bool { status == 404 }

    /// The credentials are missing or do not allow this (401, 403): a read-only side, for instance.
    public var isForbidden: Bool { status == 401 || status == 403 }

    /// The error a syncd listener refuses a node's certificate with (403): the node is no
    /// peer of it, not paired or introduced, or no longer.
    static let notPaired = "not_paired"

    /// A syncd peer refused this node as unknown to it (403, ``notPaired``), not one database.
    var isNotPaired: Bool { status == 403 && error == Self.notPaired }

    /// Worth retrying later: no answer, a server error, a timeout or throttling.
    /// Everything else (bad credentials, missing database, refused input) needs a person.
    public var isTransient: Bool { status == 0 || status >= 500 || status == 408 || status == 429 }

    /// The endpoint and what went wrong, without credentials.
    public var description: String {
        status == 0 ? "\(endpoint): \(reason)" : "\(endpoint): \(status) \(error): \(reason)"
    }
}

extension StoreError.Kind {
    /// The HTTP status CouchDB answers this kind of error with.
    var status: Int {
        switch self {
        case .badRequest: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .conflict: 409
        case .preconditionFailed: 412
        case .tooLarge: 413
        case .insufficientStorage: 507
        case .internal: 500
        }
    }
}

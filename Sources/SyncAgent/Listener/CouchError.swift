import Hummingbird
import JSON
import Store

/// An error answer in CouchDB's form: an HTTP status and a `{"error", "reason"}` body.
struct CouchError: Error, Sendable {
    /// The HTTP status.
    let status: HTTPResponse.Status
    /// CouchDB's error name.
    let error: String
    /// A human-readable reason.
    let reason: String
    /// Extra response headers (such as `WWW-Authenticate`).
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ error: String, _ reason: String) {
        self.status = status
        self.error = error
        self.reason = reason
    }

    /// The answer CouchDB gives for a store error.
    init(_ storeError: StoreError) {
        self.init(HTTPResponse.Status(code: storeError.kind.status), storeError.error, storeError.reason)
    }

    static func badRequest(_ reason: String) -> CouchError { CouchError(.badRequest, "bad_request", reason) }
    static func notFound(_ reason: String = "missing") -> CouchError { CouchError(.notFound, "not_found", reason) }
    /// 429 to an address that failed too often at `what` ("logins"): the reason, and
    /// `Retry-After`, say in how many seconds (`wait`, rounded up) to try again.
    static func tooManyFailures(_ what: String, wait: Double) -> CouchError {
        let seconds = max(1, Int(wait.rounded(.up)))
        var error = CouchError(.tooManyRequests, "too_many_requests", "Too many failed \(what) from this address; retry in \(seconds) s.")
        error.headers[.retryAfter] = String(seconds)
        return error
    }
    static let methodNotAllowed = CouchError(.methodNotAllowed, "method_not_allowed", "Method not allowed for this resource.")
    static let tooLarge = CouchError(.contentTooLarge, "too_large", "the request entity is too large")
    static let notJSON = CouchError(.unsupportedMediaType, "bad_content_type", "Content-Type must be application/json")
    /// 400 for a body that is not JSON; one nested deeper than the parser takes says so.
    static func invalidJSON(_ error: (any Error)? = nil) -> CouchError {
        if let syntax = error as? JSONSyntaxError, syntax.isNestingTooDeep {
            return .badRequest("JSON is nested more than \(JSON.maximumDepth) levels deep")
        }
        return CouchError(.badRequest, "bad_request", "invalid UTF-8 JSON")
    }
    /// A `Range` no byte of the attachment satisfies (its `Content-Range` header is added by the route).
    static let rangeNotSatisfiable = CouchError(.rangeNotSatisfiable, "requested_range_not_satisfiable", "Requested range not satisfiable")
    static let noDatabase = CouchError(.notFound, "not_found", "Database does not exist.")

    /// The JSON body of the answer.
    var body: JSON { ["error": .string(error), "reason": .string(reason)] }
}

import AsyncAlgorithms
import AsyncHTTPClient
import FoundationEssentials
import JSON
import Locking
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import Store
import Synchronization

/// A CouchDB-protocol database at a URL (another syncd, Apache CouchDB,
/// PouchDB Server) as one side of a replication.
///
/// Credentials from the URL go out as HTTP Basic authentication and appear
/// nowhere else. The endpoint owns an HTTP client: call ``shutdown()`` when done.
public final class RemoteEndpoint: Endpoint {
    /// How to reach the database.
    public struct Configuration: Sendable {
        /// The database URL, possibly with `user:password@`.
        public var url: RemoteURL
        /// How an HTTPS server's certificate is trusted.
        public var trust: PeerTrust
        /// The peer's node UUID when the caller knows it (discovery, pairing): then the
        /// replication id does not depend on what the server says about itself.
        public var peerUUID: String?
        /// The longest a request (other than a continuous feed) may take.
        public var requestTimeout: Duration
        /// The longest to wait for a connection.
        public var connectTimeout: Duration
        /// The longest an answer's body may be waited on without progress (a complete row or part): see ``AnswerProgress``.
        public var progressTimeout = ReplicatorTuning.progressTimeout
        /// The node identity presented as TLS client certificate to a pinned
        /// peer (mutual TLS: how a paired peer authenticates); `nil` presents none.
        public var clientIdentity: NodeIdentity?
        /// The largest document JSON read from the server, attachments aside (CouchDB's `max_document_size`).
        public var maximumDocumentSize = Database.Options().maximumDocumentSize
        /// The largest attachment read from the server.
        public var maximumAttachmentSize = ReplicatorTuning.maximumAttachmentSize

        /// Settings for `url`, with system trust and generous timeouts.
        public init(url: RemoteURL, trust: PeerTrust = .system, peerUUID: String? = nil,
                    requestTimeout: Duration = ReplicatorTuning.requestTimeout,
                    connectTimeout: Duration = ReplicatorTuning.connectTimeout,
                    clientIdentity: NodeIdentity? = nil) {
            self.url = url
            self.clientIdentity = clientIdentity
            self.trust = trust
            self.peerUUID = peerUUID
            self.requestTimeout = requestTimeout
            self.connectTimeout = connectTimeout
        }
    }

    /// The settings in force.
    public let configuration: Configuration
    let client: HTTPClient
    let logger: Logger
    private let authorization: String?
    private let pinnedCertificate = Locked<NIOSSLCertificate?>(nil)
    /// Why the endpoint cannot make requests at all (its trust settings cannot be used); every request throws it.
    private let setupError: EndpointError?
    /// Whether the client is shut down, or is not this endpoint's to shut down.
    private let isShutDown: Atomic<Bool>
    /// Whether the server answered `_bulk_get`; `nil` until asked.
    let bulkGetSupported = Locked<Bool?>(nil)
    /// The folder where attachments read for this endpoint as a target wait; made when first needed.
    let spool = AttachmentSpool(folder: FileManager.default.temporaryDirectory.path + "/syncd-attachments-" + UUID().uuidString)

    /// An endpoint for `configuration`, with an HTTP client of its own; no request is made until the replication starts.
    public convenience init(_ configuration: Configuration, logger: Logger = Logger(label: "syncd.endpoint")) {
        let (client, problem) = Self.makeClient(trust: configuration.trust, identity: configuration.clientIdentity,
                                                connectTimeout: configuration.connectTimeout, readTimeout: configuration.requestTimeout,
                                                connectionsPerHost: ReplicatorTuning.connectionsPerHost)
        self.init(configuration, client: client, ownsClient: true,
                  setupError: problem.map { .unreachable(configuration.url.description, $0) }, logger: logger)
    }

    /// An endpoint making its requests with `client`, which its owner configured
    /// (trust, timeouts) and shuts down; ``shutdown()`` leaves it open.
    convenience init(_ configuration: Configuration, sharing client: HTTPClient, logger: Logger) {
        self.init(configuration, client: client, ownsClient: false, setupError: nil, logger: logger)
    }

    private init(_ configuration: Configuration, client: HTTPClient, ownsClient: Bool, setupError: EndpointError?, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.client = client
        var setupError = setupError
        if configuration.url.scheme != "https" {
            if case .system = configuration.trust {} else {
                setupError = EndpointError(status: 400, error: "bad_request",
                                           reason: "a pinned certificate needs an https URL", endpoint: configuration.url.description)
            }
        }
        self.setupError = setupError
        isShutDown = Atomic(!ownsClient)
        authorization = configuration.url.credentials.map { user, password in
            "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        }
    }

    /// An HTTP client as endpoints use: these timeouts, no retried connections, no
    /// decompression, at most `connectionsPerHost` connections to a server, trusting as
    /// `trust` says and presenting `identity` to a pinned peer; and why it cannot be used, if so.
    static func makeClient(trust: PeerTrust, identity: NodeIdentity?, connectTimeout: Duration, readTimeout: Duration,
                           connectionsPerHost: Int) -> (HTTPClient, problem: String?) {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .init(connectTimeout), read: .init(readTimeout))
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        configuration.decompression = .disabled
        var problem: String?
        switch trust {
        case .certificate(let certificate):
            do {
                configuration.tlsConfiguration = try TLSSettings.client(trusting: certificate, as: identity)
            } catch {
                problem = "the pinned certificate or this node's key cannot be used for TLS: \(error)"
            }
        case .system, .fingerprint:
            configuration.tlsConfiguration = TLSSettings.system()
        }
        return (HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration), problem)
    }

    /// An endpoint for a URL text, with system trust.
    public convenience init(url: String, trust: PeerTrust = .system, peerUUID: String? = nil) throws(EndpointError) {
        self.init(Configuration(url: try RemoteURL(url), trust: trust, peerUUID: peerUUID))
    }

    /// Closes the HTTP client's connections (also done, without waiting, when the endpoint is released),
    /// unless the client is shared.
    public func shutdown() async {
        spool.removeAll()
        guard !isShutDown.exchange(true, ordering: .relaxed) else { return }
        try? await client.shutdown()
    }

    deinit {
        spool.removeAll()
        if !isShutDown.load(ordering: .relaxed) { _ = client.shutdown() }
    }

    /// The database URL without credentials.
    public var displayName: String { configuration.url.description }

    /// Always false.
    public var isLocal: Bool { false }

    /// The database path on the server: `/prefix/db`.
    var databasePath: String { configuration.url.basePath + "/" + PathEncoding.segment(configuration.url.database) }

    /// `GET /db/`; `PUT /db` when missing and asked to create it.
    public func prepare(createIfMissing: Bool) async throws(EndpointError) {
        do {
            _ = try await requestJSON(.GET, databasePath + "/")
        } catch where error.isNotFound && createIfMissing {
            do {
                _ = try await requestJSON(.PUT, databasePath)
            } catch where error.status == 412 {
                // Created meanwhile by someone else: fine.
            }
        }
    }

    /// The database's `uuid` when its info has one, else the server's `GET /` uuid and the database name.
    /// A peer UUID given in the configuration keys the checkpoints instead, once the
    /// server's `uuid` is checked to be that peer's: a server that is not refuses with `wrong_peer`.
    public func identity() async throws(EndpointError) -> String {
        let database = configuration.url.database
        if let peerUUID = configuration.peerUUID {
            let uuid = try await serverUUID()
            guard Self.sameUUID(uuid, peerUUID) else {
                throw EndpointError(status: 421, error: "wrong_peer", reason: "the server's uuid is \(uuid), not the peer UUID \(peerUUID) given", endpoint: displayName)
            }
            return "node:\(peerUUID)/\(database)"
        }
        let info = try await requestJSON(.GET, databasePath + "/")
        if let uuid = info["uuid"]?.stringValue, !uuid.isEmpty { return "db:" + uuid }
        return "node:\(try await serverUUID())/\(database)"
    }

    /// The `uuid` of the server's welcome (`GET /`).
    private func serverUUID() async throws(EndpointError) -> String {
        let welcome = try await requestJSON(.GET, configuration.url.basePath + "/")
        guard let uuid = welcome["uuid"]?.stringValue, !uuid.isEmpty else {
            throw .badResponse(displayName, "the server's welcome (GET /) has no uuid")
        }
        return uuid
    }

    /// Whether two UUIDs are the same, whatever their case and dashes.
    static func sameUUID(_ a: String, _ b: String) -> Bool {
        func normal(_ uuid: String) -> String { uuid.lowercased().replacing("-", with: "") }
        return normal(a) == normal(b)
    }

    /// `GET /db/_local/<id>`; `nil` on 404.
    public func localDocument(id: String) async throws(EndpointError) -> JSON? {
        do {
            return try await requestJSON(.GET, databasePath + "/_local/" + PathEncoding.segment(id))
        } catch where error.isNotFound {
            return nil
        }
    }

    /// `GET /db/_design/DESIGN`, for the function's source.
    public func filterFunction(_ name: String) async throws(EndpointError) -> String {
        guard let (design, _) = ReplicationFilter.designFunction(name) else { return try filterFunction(name, in: nil) }
        do {
            return try filterFunction(name, in: try await requestJSON(.GET, databasePath + "/" + PathEncoding.documentID(design)))
        } catch where error.isNotFound {
            return try filterFunction(name, in: nil)
        }
    }

    /// `PUT /db/_local/<id>`.
    public func putLocalDocument(id: String, _ json: JSON) async throws(EndpointError) -> String {
        let answer = try await requestJSON(.PUT, databasePath + "/_local/" + PathEncoding.segment(id), body: json.serializedBytes())
        return answer["rev"]?.stringValue ?? ""
    }

    /// `POST /db/_ensure_full_commit`, tolerated where missing.
    public func ensureFullCommit() async throws(EndpointError) {
        do {
            _ = try await requestJSON(.POST, databasePath + "/_ensure_full_commit", body: Array("{}".utf8))
        } catch where error.isNotFound || error.status == 405 || error.status == 400 {
            // Servers that commit every write (CouchDB 3 deprecated the call) may lack it.
        }
    }

    // MARK: HTTP

    /// Sends a request and returns the answer's status, headers and whole body; a remote
    /// sending more than `limit` bytes is refused (`bad_response`) rather than held.
    func request(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil,
        accept: String = "application/json", contentType: String = "application/json", limit: Int = ReplicatorTuning.largestAnswer
    ) async throws(EndpointError) -> (status: Int, headers: HTTPHeaders, body: ByteBuffer) {
        let response = try await send(method, path, query: query, body: body, accept: accept, contentType: contentType,
                                      timeout: configuration.requestTimeout)
        let bytes = try await collect(response, answering: "\(method) \(path)", limit: limit)
        return (Int(response.status.code), response.headers, bytes)
    }

    /// The whole body of `response`, the answer to `what` (`GET /db/doc`); more than `limit` bytes
    /// is a `bad_response` (saying `tooLarge`, if given). Watched for progress (``AnswerProgress``).
    func collect(_ response: HTTPClientResponse, answering what: String,
                 limit: Int, tooLarge: String? = nil) async throws(EndpointError) -> ByteBuffer {
        let progress = progress(of: response, answering: what)
        defer { progress.stop() }
        var collected = ByteBuffer()
        do {
            for try await chunk in progress.body {
                guard collected.readableBytes + chunk.readableBytes <= limit else {
                    throw EndpointError.badResponse(displayName, tooLarge ?? "\(what) answered more than \(limit >> 20) MiB")
                }
                collected.writeImmutableBuffer(chunk)
            }
            return collected
        } catch let error as EndpointError {
            throw error
        } catch {
            throw .unreachable(displayName, "reading the answer to \(what) failed: \(ConnectionFailure.plain(error))")
        }
    }

    /// Reads `response`'s body, the answer to `what`, watched for progress (``AnswerProgress``).
    func progress(of response: HTTPClientResponse, answering what: String) -> AnswerProgress {
        AnswerProgress(response, endpoint: displayName, answering: what, limit: configuration.progressTimeout)
    }

    /// The error of an answer with an error status: its CouchDB error body (read up to
    /// ``ReplicatorTuning/largestErrorAnswer``) as an ``EndpointError``.
    func error(answering response: HTTPClientResponse) async -> EndpointError {
        let bytes = try? await collect(response, answering: "an error answer", limit: ReplicatorTuning.largestErrorAnswer)
        return error(status: Int(response.status.code), body: bytes.flatMap { try? JSON(parsing: $0.readableBytesView) })
    }

    /// Sends a request and returns its JSON answer; an error status becomes an ``EndpointError``.
    func requestJSON(_ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil) async throws(EndpointError) -> JSON {
        let (status, _, bytes) = try await request(method, path, query: query, body: body)
        let json = try? JSON(parsing: bytes.readableBytesView)
        guard status < 400 else { throw error(status: status, body: json) }
        guard let json else { throw .badResponse(displayName, "\(method) \(path) answered \(status) without JSON") }
        return json
    }

    /// Starts a request; the caller reads the body (as a stream, for feeds).
    func send(
        _ method: HTTPMethod, _ path: String, query: [(String, String)], body: [UInt8]?,
        accept: String, contentType: String = "application/json", timeout: Duration
    ) async throws(EndpointError) -> HTTPClientResponse {
        try await send(method, path, query: query, body: body.map { .bytes(ByteBuffer(bytes: $0)) },
                       accept: accept, contentType: contentType, timeout: timeout)
    }

    /// Starts a request whose body may be streamed; the caller reads the answer's body.
    func send(
        _ method: HTTPMethod, _ path: String, query: [(String, String)], body: HTTPClientRequest.Body?,
        accept: String, contentType: String, timeout: Duration
    ) async throws(EndpointError) -> HTTPClientResponse {
        if let setupError { throw setupError }
        var request = HTTPClientRequest(url: configuration.url.origin + path + PathEncoding.query(query))
        request.method = method
        request.headers.add(name: "Accept", value: accept)
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = body
        }
        if case .fingerprint(let fingerprint) = configuration.trust, configuration.url.scheme == "https" {
            let certificate = try await pinned(fingerprint)
            do {
                request.tlsConfiguration = try TLSSettings.client(trusting: certificate, as: configuration.clientIdentity)
            } catch {
                throw .unreachable(displayName, "the node's key cannot be used for TLS: \(error)")
            }
        }
        do {
            return try await client.execute(request, timeout: .init(timeout))
        } catch {
            if let reason = ConnectionFailure.describe(error) { throw .cannotConnect(displayName, reason) }
            // With no pin, nothing vouches for the server: final, for a person to check. A pinned
            // peer whose address now answers with another certificate is only unreachable there.
            if case .system = configuration.trust, ConnectionFailure.isUntrusted(error) {
                throw await PeerTrust.untrusted(host: configuration.url.host, port: configuration.url.port, endpoint: displayName)
            }
            throw .unreachable(displayName, "\(method) \(path) failed: \(ConnectionFailure.plain(error))")
        }
    }

    /// The certificate with the pinned fingerprint, fetched once.
    private func pinned(_ fingerprint: String) async throws(EndpointError) -> NIOSSLCertificate {
        if let certificate = pinnedCertificate.withLock({ $0 }) { return certificate }
        let certificate = try await PeerTrust.fetchCertificate(
            host: configuration.url.host, port: configuration.url.port, expected: fingerprint, endpoint: displayName)
        pinnedCertificate.withLock { $0 = certificate }
        return certificate
    }

    /// CouchDB's error body as an ``EndpointError``.
    func error(status: Int, body: JSON?) -> EndpointError {
        EndpointError(status: status, error: body?["error"]?.stringValue ?? "http_\(status)",
                      reason: body?["reason"]?.stringValue ?? HTTPResponseStatus(statusCode: status).reasonPhrase,
                      endpoint: displayName)
    }

    /// An error's text with any URL credentials removed.
    static func describe(_ error: any Error) -> String {
        RemoteURL.redact(String(describing: error))
    }
}

import AsyncHTTPClient
import JSON
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import Store

/// A paired peer reached at one address: the one HTTP client, pinned to the
/// peer's certificate and presenting this node's, that every pull from the peer
/// shares while the peer answers there. ``probe()`` opens its first connection,
/// which the pulls then use. Shut down when the pulls leave the address.
final class PeerConnection: Sendable {
    /// Where the peer answers (`host:port`).
    let address: String
    /// The client, shared by the pulls' endpoints.
    let client: HTTPClient
    /// How long a request may hear nothing before the client gives up on it (and its connection).
    let readTimeout: Duration
    private let certificate: NIOSSLCertificate
    private let identity: NodeIdentity
    private let peerUUID: String

    /// A client for the peer `peerUUID` at `address`, trusting only `certificate` and presenting
    /// `identity`; it connects at the first request.
    init(address: String, certificate: NIOSSLCertificate, identity: NodeIdentity, peerUUID: String,
         readTimeout: Duration = ReplicatorTuning.peerRequestTimeout) throws(EndpointError) {
        let (client, problem) = RemoteEndpoint.makeClient(
            trust: .certificate(certificate), identity: identity, connectTimeout: ReplicatorTuning.peerConnectTimeout,
            readTimeout: readTimeout, connectionsPerHost: ReplicatorTuning.peerConnections)
        if let problem {
            _ = client.shutdown()
            throw .unreachable(address, problem)
        }
        self.address = address
        self.client = client
        self.readTimeout = readTimeout
        self.certificate = certificate
        self.identity = identity
        self.peerUUID = peerUUID
    }

    /// Checks that the peer answers here: `GET /` over TLS pinned to its certificate
    /// (another node's fails the handshake) names its UUID, within ``ReplicatorTuning/peerProbeDeadline``.
    func probe() async throws(EndpointError) {
        var request = HTTPClientRequest(url: "https://\(address)/")
        request.headers.add(name: "Accept", value: "application/json")
        let uuid: String?
        do {
            let response = try await client.execute(request, deadline: .now() + ReplicatorTuning.peerProbeDeadline)
            let body = try await response.body.collect(upTo: ReplicatorTuning.largestErrorAnswer)
            guard response.status == .ok else { throw EndpointError.unreachable(address, "GET / answered \(response.status.code)") }
            uuid = (try? JSON(parsing: body.readableBytesView))?["uuid"]?.stringValue
        } catch let error as EndpointError {
            throw error
        } catch {
            if let reason = ConnectionFailure.describe(error) { throw .cannotConnect(address, reason) }
            throw .unreachable(address, ConnectionFailure.plain(error))
        }
        guard let uuid, RemoteEndpoint.sameUUID(uuid, peerUUID) else {
            throw EndpointError(status: 421, error: "wrong_peer", reason: "the server's uuid is \(uuid ?? "missing"), not the peer's", endpoint: address)
        }
    }

    /// The database `database` of the peer, reached with this client, reading documents up to
    /// `maximumDocumentSize` (what the local databases take).
    func endpoint(_ database: String, maximumDocumentSize: Int, logger: Logger) throws(EndpointError) -> RemoteEndpoint {
        var configuration = RemoteEndpoint.Configuration(
            url: try RemoteURL("https://\(address)/\(PathEncoding.segment(database))"), trust: .certificate(certificate),
            peerUUID: peerUUID, requestTimeout: ReplicatorTuning.peerRequestTimeout,
            connectTimeout: ReplicatorTuning.peerConnectTimeout, clientIdentity: identity)
        configuration.maximumDocumentSize = maximumDocumentSize
        return RemoteEndpoint(configuration, sharing: client, logger: logger)
    }

    /// Closes the client's connections; the pulls' requests fail at once.
    func shutdown() async {
        try? await client.shutdown()
    }
}

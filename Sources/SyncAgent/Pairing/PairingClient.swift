import AsyncHTTPClient
import FoundationEssentials
import JSON
import NIOCore
import NIOHTTP1
import NIOSSL
import Store

/// Joins another node with its invitation URL: the joining side of pairing.
///
/// 1. Connects to the URL's listener and checks, in the TLS handshake, that
///    its certificate has the node ID the URL carries; any other certificate
///    ends the handshake before a byte of the request is sent.
/// 2. Reads the node's UUID from that certificate (and checks it against the
///    URL's, when the URL carries one).
/// 3. Sends the invitation's secret over TLS pinned to that certificate,
///    presenting this node's certificate as client certificate.
/// 4. Records the inviting node as a paired peer.
public struct PairingClient: Sendable {
    /// This node.
    public let identity: NodeIdentity
    /// The name this node gives itself.
    public let name: String
    /// The port this node's listener serves on, told to the inviting node so it can reach back.
    public let port: Int?
    /// Where the pairing is recorded.
    public let peers: PeerStore
    /// Whether the pairing takes part in introductions (`false`: `--no-introduce`, a private pair).
    public let introduce: Bool

    /// A client joining as `identity`.
    public init(identity: NodeIdentity, name: String, port: Int?, peers: PeerStore, introduce: Bool = true) {
        self.identity = identity
        self.name = name
        self.port = port
        self.peers = peers
        self.introduce = introduce
    }

    /// Joins the node of `invitation`; returns it as recorded (its name made unique here, and the name it knows this node by).
    public func join(_ invitation: InvitationURL) async throws(PairingError) -> PairedPeer {
        guard invitation.id != identity.id else { throw .invalidURL("the URL is this node's own invitation") }
        let certificate: NIOSSLCertificate
        do {
            certificate = try await PeerTrust.fetchCertificate(host: invitation.host, port: invitation.port,
                                                              expected: invitation.id.fingerprint, endpoint: invitation.serverURL)
        } catch let error where error.error == "certificate_mismatch" {
            throw .wrongNode("the server at \(HostPort.join(invitation.host, invitation.port)) is not node \(invitation.id.short): its certificate has another ID")
        } catch {
            throw .unreachable(error.reason)
        }
        guard let der = try? certificate.toDERBytes(), let uuid = NodeIdentity.uuid(inCertificateDER: der) else {
            throw .wrongNode("the server's certificate names no syncd node UUID")
        }
        guard invitation.uuid.map({ $0 == uuid }) ?? true else {
            throw .wrongNode("the server's certificate does not name the node UUID the URL carries")
        }
        guard uuid != identity.uuid else { throw .wrongNode("the server's certificate names this node's own UUID") }
        if let taken = peers.conflict(uuid: uuid, id: invitation.id) {
            throw .wrongNode("node UUID \(uuid) is already paired here with ID \(taken.id.short), not \(invitation.id.short)")
        }

        let answer = try await send(invitation, trusting: certificate)
        // Only what the URL (out of band) said is shared: an inviting node cannot widen it.
        let answered = Set((answer["databases"]?.arrayValue ?? []).compactMap(\.stringValue))
        let databases = invitation.databases.filter(answered.contains)
        guard answer["uuid"]?.stringValue == uuid, !databases.isEmpty else {
            throw .internal("the inviting node's answer does not match its invitation")
        }
        var peer = PairedPeer(uuid: uuid, id: invitation.id,
                              name: CouchResponder.peerName(answer["name"]?.stringValue) ?? "node " + invitation.id.short,
                              addresses: [HostPort.join(invitation.host, invitation.port)], databases: databases,
                              // Private if either side asked: an inviting node that says nothing introduces.
                              introduce: introduce && answer["introduce"]?.boolValue != false)
        peer.knownAs = CouchResponder.peerName(answer["known_as"]?.stringValue)
        do {
            return try peers.add(peer)
        } catch let error as PairingError {
            throw error
        } catch {
            throw .internal("the pairing was accepted but cannot be recorded here: \(error)")
        }
    }

    /// `POST /_pair` with the secret; the answer's JSON.
    private func send(_ invitation: InvitationURL, trusting certificate: NIOSSLCertificate) async throws(PairingError) -> JSON {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        do {
            configuration.tlsConfiguration = try TLSSettings.client(trusting: certificate, as: identity)
        } catch {
            throw .internal("this node's key cannot be used for TLS: \(error)")
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        defer { _ = client.shutdown() }
        var body: JSON.Object = ["secret": .string(invitation.secret), "name": .string(name), "introduce": .bool(introduce)]
        if let port { body["port"] = .number(Double(port)) }
        var request = HTTPClientRequest(url: invitation.serverURL + "/_pair")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: JSON.object(body).serializedBytes()))
        let status: UInt
        let bytes: ByteBuffer
        do {
            let response = try await client.execute(request, timeout: .seconds(15))
            status = response.status.code
            bytes = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw .unreachable(ConnectionFailure.plain(error))
        }
        let json = try? JSON(parsing: Array(bytes.readableBytesView))
        let reason = json?["reason"]?.stringValue ?? "status \(status)"
        switch status {
        case 200:
            guard let json else { throw .internal("the inviting node answered without JSON") }
            return json
        case 403: throw .invitationRefused(reason.hasPrefix("Pairing refused: ") ? String(reason.dropFirst(17)).trimming { $0 == "." } : reason)
        case 429: throw .rateLimited(reason)
        default: throw .internal("the inviting node answered \(status): \(reason)")
        }
    }
}

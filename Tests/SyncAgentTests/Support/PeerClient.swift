import AsyncHTTPClient
import Foundation
import NIOSSL
@testable import SyncAgent

/// HTTPS to a test listener as a node (presenting `identity` as client
/// certificate) or as a plain client, trusting exactly the listener's certificate.
final class PeerClient: Sendable {
    let client: HTTPClient

    /// A client pinned to `server`'s certificate, presenting `identity` if given.
    init(to server: TestListener, as identity: NodeIdentity? = nil) throws {
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = try TLSSettings.client(
            trusting: NIOSSLCertificate(bytes: server.listener.node.identity.certificateDER, format: .der), as: identity)
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func shutdown() async { try? await client.shutdown() }
}

extension TestListener {
    /// The listener's port.
    var port: Int { Int(anonymousURL.split(separator: ":").last!)! }

    /// A new invitation to `databases` (created if missing) as the URL `syncd pair` would print.
    func invite(_ databases: [String] = ["notes"], lifetime: Duration = .seconds(600)) throws -> InvitationURL {
        for name in databases { _ = try catalog.openOrCreate(name) }
        let (_, secret) = try listener.node.invitations.create(databases: databases, lifetime: lifetime)
        return InvitationURL(host: "127.0.0.1", port: port, databases: databases, uuid: listener.node.identity.uuid,
                             id: listener.node.identity.id, secret: secret)
    }

    /// This node joining another with `invitation`.
    func join(_ invitation: InvitationURL, name: String = "joiner") async throws(PairingError) -> PairedPeer {
        try await PairingClient(identity: listener.node.identity, name: name, port: port, peers: listener.node.peers).join(invitation)
    }

    /// An endpoint for `database` on `other`, reached as this node: TLS pinned
    /// to `other`'s ID, this node's certificate as client certificate, no password.
    func peerEndpoint(_ other: TestListener, _ database: String) throws -> RemoteEndpoint {
        RemoteEndpoint(RemoteEndpoint.Configuration(
            url: try RemoteURL(other.anonymousURL + "/" + database), trust: .fingerprint(other.listener.node.identity.id.description),
            peerUUID: other.listener.node.identity.uuid, clientIdentity: listener.node.identity))
    }
}

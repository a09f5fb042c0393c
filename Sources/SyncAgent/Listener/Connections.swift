import Locking
import NIOCore
import NIOSSL

/// The listener's open connections and the node ID of the client certificate
/// each presented, read once per connection. Revoking a peer closes every
/// connection it made requests on as a peer.
final class Connections: Sendable {
    private struct Entry {
        let channel: any Channel
        let client: ClientCertificate?
        /// Whether a request on it was made as a paired peer.
        var peer = false
    }
    private let entries = Locked<[ObjectIdentifier: Entry]>([:])

    /// The certificate the client of `channel` presented, `nil` for none.
    func client(of channel: any Channel) async -> ClientCertificate? {
        let key = ObjectIdentifier(channel)
        if let entry = entries.withLock({ $0[key] }) { return entry.client }
        let certificate = try? await channel.nioSSL_peerCertificate().get()
        let client = certificate.flatMap { try? $0.toDERBytes() }.map(ClientCertificate.init(der:))
        let first = entries.withLock { entries in
            if entries[key] != nil { return false }
            entries[key] = Entry(channel: channel, client: client)
            return true
        }
        guard first else { return client }
        channel.closeFuture.whenComplete { [weak self] _ in
            _ = self?.entries.withLock { $0.removeValue(forKey: key) }
        }
        return client
    }

    /// Notes that a request on `channel` was made as a paired peer; `true` for the connection's first.
    func markPeer(_ channel: any Channel) -> Bool {
        entries.withLock { entries in
            let key = ObjectIdentifier(channel)
            guard entries[key]?.peer == false else { return false }
            entries[key]?.peer = true
            return true
        }
    }

    /// Closes every connection used by a peer whose ID `revoked` says is no longer paired.
    func closePeers(where revoked: (NodeID) -> Bool) {
        let channels = entries.withLock { entries in
            entries.values.filter { $0.peer && ($0.client.map { revoked($0.id) } ?? false) }.map(\.channel)
        }
        for channel in channels { channel.close(promise: nil) }
    }

    /// How many connections are known.
    var count: Int { entries.withLock { $0.count } }
}

/// What a TLS client certificate says: the node ID it has and the node UUID it names.
struct ClientCertificate: Sendable {
    /// Its fingerprint.
    let id: NodeID
    /// The UUID its subject names, `nil` if it is not a syncd node's certificate.
    let uuid: String?

    init(der: [UInt8]) {
        id = NodeID(certificateDER: der)
        uuid = NodeIdentity.uuid(inCertificateDER: der)
    }
}

import Locking
import NIOCore
import NIOSSL

/// The listener's open connections and the node ID of the client certificate
/// each presented, read once per connection. Revoking a peer closes every
/// connection it holds.
final class Connections: Sendable {
    private struct Entry {
        let channel: any Channel
        let client: ClientCertificate?
    }
    private let entries = Locked<[ObjectIdentifier: Entry]>([:])

    /// The certificate the client of `channel` presented, `nil` for none.
    func client(of channel: any Channel) async -> ClientCertificate? {
        let key = ObjectIdentifier(channel)
        if let entry = entries.withLock({ $0[key] }) { return entry.client }
        let certificate = try? await channel.nioSSL_peerCertificate().get()
        let client = certificate.flatMap { try? $0.toDERBytes() }.map(ClientCertificate.init(der:))
        entries.withLock { $0[key] = Entry(channel: channel, client: client) }
        channel.closeFuture.whenComplete { [weak self] _ in
            _ = self?.entries.withLock { $0.removeValue(forKey: key) }
        }
        return client
    }

    /// Closes every connection whose client presented one of `ids`.
    func close(clients ids: Set<NodeID>) {
        guard !ids.isEmpty else { return }
        let channels = entries.withLock { entries in
            entries.values.filter { $0.client.map { ids.contains($0.id) } ?? false }.map(\.channel)
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

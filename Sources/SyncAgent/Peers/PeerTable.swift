import Discovery

/// Reads a browser's service events as syncd peer events: a service is a peer only while
/// its TXT names a UUID other than this node's, and a new UUID under the same instance
/// name is another node (the old one gone, the new one appeared). Pure, so its rules are
/// tested directly.
public struct PeerTable: Sendable {
    private let ownUUID: String?
    private var peers: [String: Peer] = [:]

    /// An empty table that leaves out the node `ownUUID` (this one).
    public init(excluding ownUUID: String?) {
        self.ownUUID = ownUUID
    }

    /// The peer events `event` makes.
    public mutating func apply(_ event: ServiceEvent) -> [PeerEvent] {
        let service = event.service
        let id = "\(service.name)\u{0}\(service.domain)"
        let before = peers[id]
        let after: Peer? = if case .gone = event { nil } else { Peer(service, excluding: ownUUID) }
        peers[id] = after
        switch (before, after) {
        case (nil, nil): return []
        case (nil, let new?): return [.appeared(new)]
        case (let old?, nil): return [.gone(old)]
        case (let old?, let new?):
            if old == new { return [] }
            return old.uuid == new.uuid ? [.changed(new)] : [.gone(old), .appeared(new)]
        }
    }
}

extension Browser {
    /// The syncd peers among the services known now, without the node `ownUUID`.
    public func peers(excluding ownUUID: String? = nil) -> [Peer] {
        services.compactMap { Peer($0, excluding: ownUUID) }
    }

    /// Peer events from now on, starting with an appearance for each peer already known,
    /// without the node `ownUUID`: ``events()`` read through a ``PeerTable``.
    public func peerEvents(excluding ownUUID: String? = nil) -> AsyncStream<PeerEvent> {
        let services = events()
        let (stream, continuation) = AsyncStream.makeStream(of: PeerEvent.self)
        let task = Task {
            var table = PeerTable(excluding: ownUUID)
            for await event in services {
                for peerEvent in table.apply(event) { continuation.yield(peerEvent) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

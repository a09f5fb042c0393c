import Hummingbird
import JSON

/// `GET /_introductions`: what this node introduces to the member asking (the peers it
/// paired with directly, for the databases it shares with both; see ``PeerStore/introductions(for:)``),
/// as `{"tag": "…", "introductions": [{"uuid", "id", "name", "addresses", "databases", "paired_at"}]}`.
/// Only members ask, over mutual TLS. With `since=TAG` (the tag last answered) the answer waits,
/// up to `timeout` milliseconds (default 60,000, at most 300,000), until the list is another:
/// a long poll, so a new member or a removal reaches every member at once without polling.
extension CouchResponder {
    func introductions(_ exchange: Exchange) throws -> Response {
        guard let member = exchange.principal.peer else {
            throw CouchError(.forbidden, "forbidden", "Only the group's members read its introductions.")
        }
        let since = exchange.query["since"]
        let milliseconds = try exchange.query.integer("timeout") ?? 60_000
        guard (0...300_000).contains(milliseconds) else { throw CouchError.badRequest("timeout must be between 0 and 300000") }
        let store = listener.node.peers
        // Subscribed before the list is read, so no change made after it is missed.
        let changes = store.changes()
        let answer = Self.introductions(for: member.id, in: store)
        guard let since, answer.tag == since else { return Self.json(answer.json) }
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        // Bounded by `timeout`: the member asks again on the same connection.
        return try waitingFeed(exchange, contentType: "application/json", watchesClient: false) { writer, shutdown in
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in changes where Self.introductions(for: member.id, in: store).tag != since { return }
                }
                group.addTask { for await _ in shutdown {} }
                group.addTask { try? await Task.sleep(until: deadline) }
                _ = await group.next()
                group.cancelAll()
            }
            try await writer.write(ByteBuffer(bytes: Self.introductions(for: member.id, in: store).json.serializedBytes()))
        }
    }

    /// The answer for the member `id` now: nothing once it is no member.
    private static func introductions(for id: NodeID, in store: PeerStore) -> (tag: String, json: JSON) {
        Introduction.answer(store.peer(id: id).map(store.introductions(for:)) ?? [])
    }
}

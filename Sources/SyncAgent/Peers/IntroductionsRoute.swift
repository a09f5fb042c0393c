import AsyncAlgorithms
import Hummingbird
import JSON

/// `GET /_introductions`: what this node introduces to the member asking (the peers it
/// paired with directly, for the databases it shares with both; see ``PeerStore/introductions(for:)``),
/// as `{"tag": "…", "introductions": [{"uuid", "id", "name", "addresses", "databases", "paired_at"}]}`.
/// Only members ask, over mutual TLS. With `since=TAG` (the tag last answered) the answer waits,
/// up to `timeout` milliseconds (default 60,000, at most 300,000), until the list is another:
/// a long poll, so a new member or a removal reaches every member at once without polling.
/// With `heartbeat=MS` a newline is written every MS while it waits (JSON allows whitespace
/// before the answer), so a member can wait minutes on a client that gives up on silence.
extension CouchResponder {
    func introductions(_ exchange: Exchange) throws -> Response {
        guard let member = exchange.principal.peer else {
            throw CouchError(.forbidden, "forbidden", "Only the group's members read its introductions.")
        }
        let since = exchange.query["since"]
        let milliseconds = try exchange.query.integer("timeout") ?? 60_000
        guard (0...300_000).contains(milliseconds) else { throw CouchError.badRequest("timeout must be between 0 and 300000") }
        let heartbeat = try exchange.query.milliseconds("heartbeat", ceiling: .seconds(300))
        let store = listener.node.peers
        // Subscribed before the list is read, so no change made after it is missed.
        let changes = store.changes()
        let answer = Self.introductions(for: member.id, in: store)
        guard let since, answer.tag == since else { return Self.json(answer.json) }
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        // Bounded by `timeout`: the member asks again on the same connection.
        return try waitingFeed(exchange, contentType: "application/json", watchesClient: false) { writer, shutdown in
            let changed = changes.filter { _ in Self.introductions(for: member.id, in: store).tag != since }.map { _ in Wait.answer }
            let ended = merge(chain(shutdown.compactMap { _ in Wait?.none }, [Wait.answer].async),
                              [Wait.answer].async.map { answer in try? await Task.sleep(until: deadline); return answer })
            let beats = AsyncTimerSequence(interval: heartbeat ?? .seconds(300), clock: ContinuousClock()).map { _ in Wait.heartbeat }
            for await wait in merge(changed, ended, beats) {
                guard wait == .heartbeat else { break }
                if heartbeat != nil { try await writer.write(ByteBuffer(bytes: [0x0A])) }
            }
            try await writer.write(ByteBuffer(bytes: Self.introductions(for: member.id, in: store).json.serializedBytes()))
        }
    }

    /// What ends a held answer's wait, or interrupts it.
    private enum Wait: Sendable { case answer, heartbeat }

    /// The answer for the member `id` now: nothing once it is no member.
    private static func introductions(for id: NodeID, in store: PeerStore) -> (tag: String, json: JSON) {
        Introduction.answer(store.peer(id: id).map(store.introductions(for:)) ?? [])
    }
}

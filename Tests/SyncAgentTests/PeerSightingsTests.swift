import Foundation
@testable import SyncAgent
import XCTest

/// What ``PeerStore/seen(_:fromHost:)`` writes to `peers.json` and whom it tells: every
/// request of every peer is noted, so the file must not follow each one.
final class PeerSightingsTests: XCTestCase {
    func testTimesAreWrittenTogetherAndQuietlyAndANewHostAtOnceAndAloud() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let peers = PeerStore(directory: directory.path)
        let ids = [NodeID(certificateDER: [1]), NodeID(certificateDER: [2])]
        for (index, id) in ids.enumerated() {
            try peers.add(PairedPeer(uuid: UUID().uuidString, id: id, name: "p\(index)", addresses: ["10.0.0.\(index + 1):6984"], databases: ["notes"]))
        }
        let path = directory.path + "/peers.json"
        func stamp() -> FileStamp? { FileStamp(path: path) }
        let beforeSightings = peers.changes()

        // The first sighting is written at once.
        peers.seen(ids[0], fromHost: "10.0.0.1")
        let first = stamp()
        XCTAssertNotNil(peers.peer(id: ids[0])?.lastSeen)
        // Within the interval, more requests of both peers leave the file alone.
        for _ in 0..<50 { for id in ids { peers.seen(id, fromHost: nil) } }
        XCTAssertEqual(stamp(), first, "a request within the interval rewrote peers.json")
        XCTAssertNil(peers.peer(id: ids[1])?.lastSeen)
        let toldOfTimes = await Self.told(beforeSightings, within: .milliseconds(300))
        XCTAssertFalse(toldOfTimes, "writing the times woke the file's subscribers")

        // A new host is written at once, and told: the agent follows the peer there.
        let beforeMove = peers.changes()
        peers.seen(ids[1], fromHost: "10.0.0.9")
        XCTAssertEqual(peers.peer(id: ids[1])?.addresses.first, "10.0.0.9:6984")
        XCTAssertNotNil(peers.peer(id: ids[1])?.lastSeen)
        let toldOfMove = await Self.told(beforeMove, within: .seconds(5))
        XCTAssertTrue(toldOfMove, "a move was not announced")
    }

    /// Whether `changes` tells of a change within `limit`.
    private static func told(_ changes: AsyncStream<Void>, within limit: Duration) async -> Bool {
        let waiting = Task { for await _ in changes { return true }; return false }
        let timer = Task { try? await Task.sleep(for: limit); waiting.cancel() }
        defer { timer.cancel() }
        return await waiting.value
    }
}

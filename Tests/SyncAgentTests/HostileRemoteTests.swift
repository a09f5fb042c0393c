import Foundation
import Store
import SyncAgent
import XCTest

/// A remote that answers wrongly gets the replication stopped with a clear error:
/// never a loop for ever, unbounded memory, or documents it was not asked for.
final class HostileRemoteTests: XCTestCase {
    private func remote(_ answer: @escaping @Sendable (String, String, [UInt8]) -> (Int, String)) throws -> (HostileRemote, RemoteEndpoint) {
        let server = try HostileRemote { method, target, body in
            let (status, text) = answer(method, target, body)
            return (status, Array(text.utf8))
        }
        let endpoint = try RemoteEndpoint(url: server.url + "/db")
        addTeardownBlock {
            await endpoint.shutdown()
            server.stop()
        }
        return (server, endpoint)
    }

    /// Reads the feed, giving up (as a failure of the test) after 50 batches.
    private func readFeed(_ endpoint: RemoteEndpoint, continuous: Bool = false) async -> Error? {
        let batches = BatchCount()
        do {
            try await endpoint.changes(ChangeFeedRequest(since: .zero, continuous: continuous, batchSize: 2, filter: nil)) { _ in
                if batches.next() > 50 { throw TestSupportError("still reading after 50 batches") }
            }
            return nil
        } catch {
            return error
        }
    }

    func testAFeedThatNeverAdvancesIsRefused() async throws {
        let (_, endpoint) = try remote { _, _, _ in
            (200, #"{"results":[{"seq":5,"id":"a","changes":[{"rev":"1-a"}]},{"seq":5,"id":"b","changes":[{"rev":"1-b"}]}],"last_seq":5,"pending":3}"#)
        }
        let error = await readFeed(endpoint)
        XCTAssertEqual((error as? EndpointError)?.error, "bad_response", "\(String(describing: error))")
    }

    func testLocalDocumentsInAFeedAreRefused() async throws {
        let (_, endpoint) = try remote { _, _, _ in
            (200, #"{"results":[{"seq":1,"id":"_local/checkpoint","changes":[{"rev":"1-a"}]}],"last_seq":1,"pending":0}"#)
        }
        let error = await readFeed(endpoint)
        XCTAssertEqual((error as? EndpointError)?.error, "bad_response", "\(String(describing: error))")
    }

    func testAContinuousLineWithoutEndIsRefused() async throws {
        let (_, endpoint) = try remote { _, target, _ in
            if target.contains("feed=continuous") { return (200, "{\"seq\":1,\"id\":\"" + String(repeating: "x", count: 17 << 20)) }
            return (200, #"{"results":[],"last_seq":0,"pending":0}"#)
        }
        let error = await readFeed(endpoint, continuous: true)
        XCTAssertEqual((error as? EndpointError)?.error, "bad_response", "\(String(describing: error))")
    }

    func testBulkGetAnswersAreMatchedToTheQuestions() async throws {
        let (_, endpoint) = try remote { _, target, _ in
            guard target.contains("_bulk_get") else { return (404, #"{"error":"not_found","reason":"missing"}"#) }
            return (200, #"{"results":[{"id":"a","docs":[{"ok":{"_id":"a","_rev":"1-a"}}]},{"id":"_local/x","docs":[{"ok":{"_id":"_local/x","_rev":"1-x"}}]}]}"#)
        }
        do {
            let fetched = try await endpoint.revisions([MissingRevisions(id: "a", missing: [RevisionID("1-a")!])])
            XCTFail("accepted \(fetched)")
        } catch {
            XCTAssertEqual(error.error, "bad_response", "\(error)")
        }
    }

    func testARevisionOfAnotherDocumentIsNotTakenForTheOneAsked() async throws {
        let (_, endpoint) = try remote { _, target, _ in
            guard target.contains("_bulk_get") else { return (404, #"{"error":"not_found","reason":"missing"}"#) }
            return (200, #"{"results":[{"id":"a","docs":[{"ok":{"_id":"victim","_rev":"1-a","x":1}}]}]}"#)
        }
        let fetched = try await endpoint.revisions([MissingRevisions(id: "a", missing: [RevisionID("1-a")!])])
        XCTAssertEqual(fetched.count, 1)
        guard case .failed(let id, _, _)? = fetched.first else { return XCTFail("took \(fetched)") }
        XCTAssertEqual(id, "a")
    }
}

/// Counts the batches a feed delivered.
private final class BatchCount: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int { lock.withLock { value += 1; return value } }
}

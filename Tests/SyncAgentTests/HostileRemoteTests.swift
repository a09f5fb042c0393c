import Foundation
import JSON
import Store
import Locking
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

    /// Every row of both feeds is read by one reader: a malformed one stops the replication with its reason.
    func testMalformedRowsAreRefusedWithTheirReasonInBothFeeds() async throws {
        let cases = [
            (#"{"seq":1,"changes":[{"rev":"1-a"}]}"#, "lacks seq, id or changes"),
            (#"{"seq":1,"id":"a"}"#, "lacks seq, id or changes"),
            (#"{"id":"a","changes":[{"rev":"1-a"}]}"#, "lacks seq, id or changes"),
            (#"{"seq":1,"id":"a","changes":{"rev":"1-a"}}"#, "lacks seq, id or changes"),
            (#"{"seq":1,"id":7,"changes":[{"rev":"1-a"}]}"#, "lacks seq, id or changes"),
            (#"[1]"#, "lacks seq, id or changes"),
            (#"{"seq":1,"id":"a","changes":[{"rev":"x"}]}"#, "invalid rev"),
            (#"{"seq":1,"id":"a","changes":[{"rev":"1-a"},{}]}"#, "invalid rev"),
            (#"{"seq":1,"id":"_local/a","changes":[{"rev":"1-a"}]}"#, "local document _local/a"),
            (#"{"seq":1,"id":"a","changes":[{"rev":"1-a"}]"#, "not JSON"),
        ]
        for (row, reason) in cases {
            let (_, endpoint) = try remote { _, target, _ in
                target.contains("feed=continuous") ? (200, row + "\n") : (200, #"{"results":[],"last_seq":0,"pending":0}"#)
            }
            let error = await readFeed(endpoint, continuous: true) as? EndpointError
            XCTAssertEqual(error?.error, "bad_response", row)
            XCTAssertTrue(error?.reason.contains(reason) == true, "\(row): \(String(describing: error))")

            let (_, page) = try remote { _, _, _ in (200, #"{"results":["# + row + #"],"last_seq":1,"pending":0}"#) }
            let pageError = await readFeed(page) as? EndpointError
            XCTAssertEqual(pageError?.error, "bad_response", row)
            XCTAssertTrue(pageError?.reason.contains(reason == "not JSON" ? "without JSON" : reason) == true,
                          "\(row): \(String(describing: pageError))")
        }
    }

    /// Rows are read as CouchDB writes them: members in any order, ones syncd does not use, a
    /// sequence of any kind; a carried `doc` is kept for a first revision only.
    func testRowsAreReadWhateverTheirMembersOrder() async throws {
        let first = "1-0123456789abcdef0123456789abcdef"
        let lines = [
            #"{"changes":[{"rev":"2-b"},{"rev":"1-a"}],"deleted":true,"extra":{"x":[1,"]"]},"id":"a","seq":"2-x"}"#,
            #"{"seq":3,"id":"b","doc":{"_id":"b","_rev":"\#(first)","x":[1]},"changes":[{"rev":"\#(first)"}]}"#,
            #"{"seq":4,"id":"c","doc":{"_id":"c","_rev":"2-c"},"changes":[{"rev":"2-c"}],"deleted":"yes"}"#,
            #"{"last_seq":4}"#,
        ]
        let (_, endpoint) = try remote { _, target, _ in
            target.contains("feed=continuous") ? (200, lines.joined(separator: "\n") + "\n") : (200, #"{"results":[],"last_seq":0,"pending":0}"#)
        }
        let rows = Locked<[ChangedDocument]>([])
        _ = try? await endpoint.changes(ChangeFeedRequest(since: .zero, continuous: true, batchSize: 10, filter: nil)) { batch in
            let count = rows.withLock { $0 += batch.changes; return $0.count }
            if count >= 3 { throw CancellationError() }
        }
        let read = rows.withLock { $0 }
        XCTAssertEqual(read.map(\.id), ["a", "b", "c"])
        XCTAssertEqual(read.first?.sequence, ChangeSequence(.string("2-x")))
        XCTAssertEqual(read.first?.revisions, [RevisionID("2-b")!, RevisionID("1-a")!])
        XCTAssertEqual(read.map(\.deleted), [true, false, false])
        XCTAssertEqual(read.map { $0.carriedDocument != nil }, [false, true, false])
        XCTAssertEqual(read.dropFirst().first?.firstRevision?.json["x"], [1])
    }

    /// A row is taken for held only when it names one revision, sent as plain text: one whose
    /// revision comes escaped, or that names several, is read whole, in order, whatever the
    /// target is asked.
    func testOnlyARowNamingOnePlainRevisionIsTakenForHeld() async throws {
        let first = "1-0123456789abcdef0123456789abcdef"
        let escaped = #"1-0123456789abcdef0123456789abcde\u0066"#
        let lines = [
            #"{"seq":1,"id":"a","changes":[{"rev":"\#(first)"}],"doc":{"_id":"a","_rev":"\#(first)"}}"#,
            #"{"seq":2,"id":"b","changes":[{"rev":"\#(escaped)"}]}"#,
            #"{"seq":3,"id":"c","changes":[{"rev":"\#(first)"},{"rev":"2-b"}]}"#,
            #"{"last_seq":3}"#,
        ]
        let (_, endpoint) = try remote { _, target, _ in
            target.contains("feed=continuous") ? (200, lines.joined(separator: "\n") + "\n") : (200, #"{"results":[],"last_seq":0,"pending":0}"#)
        }
        let asked = Locked<[String]>([])
        let request = ChangeFeedRequest(since: .zero, continuous: true, batchSize: 10, filter: nil) { revision, id in
            asked.withLock { $0.append(id + " " + String(decoding: revision, as: UTF8.self)) }
            return true
        }
        let batches = Locked<[ChangeBatch]>([])
        _ = try? await endpoint.changes(request) { batch in
            let count = batches.withLock { $0.append(batch); return $0.reduce(0) { $0 + $1.count } }
            if count >= 3 { throw CancellationError() }
        }
        let read = batches.withLock { $0 }
        XCTAssertEqual(read.reduce(0) { $0 + $1.alreadyHeld }, 1)
        let rows = read.flatMap(\.changes)
        XCTAssertEqual(rows.map(\.id), ["b", "c"])
        XCTAssertEqual(rows.map(\.revisions), [[RevisionID(first)!], [RevisionID(first)!, RevisionID("2-b")!]])
        XCTAssertEqual(asked.withLock { $0 }, ["a " + first], "only the row naming one plain revision is asked about")
    }

    func testAContinuousLineWithoutEndIsRefused() async throws {
        let (_, endpoint) = try remote { _, target, _ in
            if target.contains("feed=continuous") { return (200, "{\"seq\":1,\"id\":\"" + String(repeating: "x", count: 17 << 20)) }
            return (200, #"{"results":[],"last_seq":0,"pending":0}"#)
        }
        let error = await readFeed(endpoint, continuous: true)
        XCTAssertEqual((error as? EndpointError)?.error, "bad_response", "\(String(describing: error))")
    }

    func testAnAnswerTooLargeToHoldIsRefused() async throws {
        let (_, endpoint) = try remote { _, _, _ in
            (200, #"{"results":[],"padding":""# + String(repeating: " ", count: 65 << 20) + #"","last_seq":0}"#)
        }
        let error = await readFeed(endpoint)
        XCTAssertEqual((error as? EndpointError)?.error, "bad_response", "\(String(describing: error))")
    }

    /// A chunk of a continuous feed that ends on a full batch ends with a caught-up batch: before,
    /// both batches of a four-row chunk (batches of two) went on as not caught up, and a
    /// replication whose source then fell quiet stayed active for ever.
    func testAContinuousChunkEndingOnAFullBatchIsCaughtUp() async throws {
        let rows = (1...4).map { #"{"seq":\#($0),"id":"d\#($0)","changes":[{"rev":"1-a"}]}"# }.joined(separator: "\n") + "\n"
        let (_, endpoint) = try remote { _, target, _ in
            target.contains("feed=continuous") ? (200, rows) : (200, #"{"results":[],"last_seq":0,"pending":0}"#)
        }
        let batches = Locked<[ChangeBatch]>([])
        _ = try? await endpoint.changes(ChangeFeedRequest(since: .zero, continuous: true, batchSize: 2, filter: nil)) { batch in
            batches.withLock { $0.append(batch) }
        }
        let read = batches.withLock { $0 }.filter { !$0.changes.isEmpty }
        XCTAssertEqual(read.map(\.changes.count), [2, 2])
        XCTAssertEqual(read.map(\.caughtUp), [false, true])
    }

    /// Rows naming only a revision the target has as its winner are counted where they are
    /// read, their `doc` skipped; the feed's position passes them, even when a chunk holds
    /// nothing else.
    func testRowsTheTargetHoldsAreCountedAndPassedInTheContinuousFeed() async throws {
        let rev = "1-0123456789abcdef0123456789abcdef"
        @Sendable func row(_ n: Int, _ revision: String = rev) -> String {
            #"{"seq":\#(n),"id":"d\#(n)","changes":[{"rev":"\#(revision)"}],"doc":{"_id":"d\#(n)","_rev":"\#(revision)"}}"#
        }
        // The second chunk, all held, is sent once the first is delivered.
        let firstDelivered = DispatchSemaphore(value: 0)
        let server = try HostileRemote(answering: { _, target, _ in
            guard target.contains("feed=continuous") else {
                return HostileAnswer(status: 200, body: Array(#"{"results":[],"last_seq":0,"pending":0}"#.utf8))
            }
            var answer = HostileAnswer(status: 200, body: [])
            answer.pieces = [
                Array((row(1) + "\n" + row(2) + "\n" + row(3, "2-0123456789abcdef0123456789abcdef") + "\n").utf8),
                Array((row(4) + "\n" + row(5) + "\n").utf8),
            ]
            answer.beforePiece = { index in if index == 1 { _ = firstDelivered.wait(timeout: .now() + 30) } }
            return answer
        })
        let endpoint = try RemoteEndpoint(url: server.url + "/db")
        addTeardownBlock { await endpoint.shutdown() }
        // The target has d2, d4 and d5 at `rev`, and d3 only at an older revision.
        let held: ChangeFeedRequest.TargetWinners = { revision, id in
            ["d2", "d3", "d4", "d5"].contains(id) && RevisionID(utf8: revision)?.generation == 1
        }
        let request = ChangeFeedRequest(since: .zero, continuous: true, batchSize: 100, filter: nil, targetWinners: held)
        let batches = Locked<[ChangeBatch]>([])
        // The feed ends without its last_seq: an error, after what it sent was delivered.
        _ = try? await endpoint.changes(request) { batch in
            batches.withLock { $0.append(batch) }
            if !batch.changes.isEmpty { firstDelivered.signal() }
        }
        let read = batches.withLock { $0 }.filter { !$0.changes.isEmpty || $0.alreadyHeld > 0 }.prefix(2)
        XCTAssertEqual(read.map { $0.changes.map(\.id) }, [["d1", "d3"], []])
        XCTAssertEqual(read.map(\.alreadyHeld), [1, 2])
        XCTAssertEqual(read.map(\.lastSequence), [ChangeSequence(UInt64(3)), ChangeSequence(UInt64(5))])
        XCTAssertNotNil(read.first?.changes.first?.carriedDocument, "a row not held keeps its doc")
    }

    /// A continuous feed the server ends without its last_seq is a broken connection (retried
    /// after a backoff), not a feed to reopen at once, for ever.
    func testAContinuousFeedCutShortIsAnErrorNotALoop() async throws {
        let (_, endpoint) = try remote { _, target, _ in
            target.contains("feed=continuous") ? (200, "") : (200, #"{"results":[],"last_seq":0,"pending":0}"#)
        }
        let error = await readFeed(endpoint, continuous: true)
        XCTAssertEqual((error as? EndpointError)?.status, 0, "\(String(describing: error))")
    }

    /// A continuous feed that stops sending, heartbeats included, is declared dead after two and
    /// a half heartbeat intervals: its connection is closed, not waited on for ever.
    func testASilentContinuousFeedIsDeclaredDead() async throws {
        let released = DispatchSemaphore(value: 0)
        let server = try HostileRemote(answering: { _, target, _ in
            guard target.contains("feed=continuous") else {
                return HostileAnswer(status: 200, body: Array(#"{"results":[],"last_seq":0,"pending":0}"#.utf8))
            }
            var answer = HostileAnswer(status: 200, body: [])
            answer.pieces = [Array("{\"seq\":1,\"id\":\"a\",\"changes\":[{\"rev\":\"1-a\"}]}\n".utf8), Array("{\"last_seq\":1}\n".utf8)]
            answer.beforePiece = { index in if index == 1 { _ = released.wait(timeout: .now() + 30) } }
            return answer
        })
        let endpoint = try RemoteEndpoint(url: server.url + "/db")
        defer { released.signal() }
        addTeardownBlock {
            await endpoint.shutdown()
            server.stop()
        }
        let rows = BatchCount()
        let request = ChangeFeedRequest(since: .zero, continuous: true, batchSize: 10, filter: nil, heartbeatMilliseconds: 200)
        do {
            try await endpoint.changes(request) { batch in
                for _ in batch.changes { _ = rows.next() }
            }
            XCTFail("the feed ended")
        } catch let error as EndpointError {
            XCTAssertEqual(error.status, 0, "\(error)")
            XCTAssertTrue(error.reason.contains("no answer for 500 ms"), "\(error)")
        }
        XCTAssertEqual(rows.next(), 2, "the row before the silence was delivered")
    }

    /// A source that drips its `_bulk_get` answer and never completes a result is cut once it has
    /// been waited on for the progress timeout (a transient error: the replication retries with
    /// back-off, and status shows the reason); one that completes a result now and then is read to
    /// the end however long the whole answer takes.
    func testAnAnswerThatMakesNoProgressIsCutAndOneThatDoesIsRead() async throws {
        let results = ["a", "b", "c"].map { #"{"id":"\#($0)","docs":[{"ok":{"_id":"\#($0)","_rev":"1-\#($0)"}}]}"# }
        let body = Array((#"{"results":["# + results.joined(separator: ",") + "]}").utf8)
        func endpoint(answering answer: @escaping @Sendable () -> HostileAnswer) throws -> RemoteEndpoint {
            let server = try HostileRemote(answering: { _, target, _ in
                target.contains("_bulk_get") ? answer() : HostileAnswer(status: 404, body: Array(#"{"error":"not_found","reason":"missing"}"#.utf8))
            })
            var configuration = RemoteEndpoint.Configuration(url: try RemoteURL(server.url + "/db"))
            configuration.progressTimeout = .seconds(1)
            let endpoint = RemoteEndpoint(configuration)
            addTeardownBlock {
                await endpoint.shutdown()
                server.stop()
            }
            return endpoint
        }
        let asked = ["a", "b", "c"].map { MissingRevisions(id: $0, missing: [RevisionID("1-\($0)")!]) }

        // A byte every 0.1 s: the first result would be complete after 5 s.
        let dripping = try endpoint {
            var answer = HostileAnswer.slowly(body, pieceSize: 1)
            answer.beforePiece = { _ in usleep(100_000) }
            return answer
        }
        do {
            let fetched = try await dripping.revisions(asked)
            XCTFail("read \(fetched)")
        } catch {
            XCTAssertEqual(error.status, 0, "a transient error, retried: \(error)")
            XCTAssertTrue(error.reason.hasSuffix("the answer to POST /db/_bulk_get made no progress for 1 s"), "\(error)")
        }

        // A result every 0.4 s: 1.6 s in all, more than the timeout, but never 1 s without a result.
        let steady = try endpoint {
            var answer = HostileAnswer(status: 200, body: [])
            let cuts = results.map { Array(($0 + ",").utf8).count }
            var pieces: [[UInt8]] = []
            var offset = 0
            for cut in [12] + cuts.dropLast() { pieces.append(Array(body[offset..<(offset + cut)])); offset += cut }
            pieces.append(Array(body[offset...]))
            answer.pieces = pieces
            answer.beforePiece = { index in if index > 0 { usleep(400_000) } }
            return answer
        }
        let fetched = try await steady.revisions(asked)
        XCTAssertEqual(fetched.count, 3, "\(fetched)")
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

    /// A source answering with a revision other than the one asked for (and not a leaf descending
    /// from it) gets that document failed, not the other revision written in its place; a leaf
    /// that descends from the one asked for (`latest=true`) is taken.
    func testAnotherRevisionThanTheOneAskedIsNotTakenForIt() async throws {
        let (_, endpoint) = try remote { _, target, _ in
            guard target.contains("_bulk_get") else { return (404, #"{"error":"not_found","reason":"missing"}"#) }
            return (200, #"{"results":[{"id":"a","docs":[{"ok":{"_id":"a","_rev":"2-z","_revisions":{"start":2,"ids":["z","y"]}}}]},"#
                + #"{"id":"b","docs":[{"ok":{"_id":"b","_rev":"3-c","_revisions":{"start":3,"ids":["c","b","a"]}}}]},"#
                + #"{"id":"c","docs":[{"ok":{"_id":"c","_rev":"1-c"}}]}]}"#)
        }
        let fetched = try await endpoint.revisions([
            MissingRevisions(id: "a", missing: [RevisionID("1-a")!]), MissingRevisions(id: "b", missing: [RevisionID("2-b")!]),
            MissingRevisions(id: "c", missing: [RevisionID("1-c")!, RevisionID("2-c")!]),
        ])
        XCTAssertEqual(fetched.count, 4, "\(fetched)")
        guard case .failed("a", RevisionID("1-a"), let reason)? = fetched.first else { return XCTFail("took \(fetched)") }
        XCTAssertTrue(reason.contains("not asked for"), reason)
        guard case .found(let descendant) = fetched[1] else { return XCTFail("\(fetched[1])") }
        XCTAssertEqual(descendant.revision, RevisionID("3-c"), "a leaf descending from the revision asked is what latest=true answers")
        guard case .found = fetched[2], case .failed("c", RevisionID("2-c"), let leftOut) = fetched[3] else { return XCTFail("\(fetched)") }
        XCTAssertTrue(leftOut.contains("left out"), leftOut)
    }

    /// A 413 from the target splits the request (as CouchDB's replicator does) until each
    /// revision goes alone; only one too large by itself is refused.
    func testATooLargeBatchIsSplitNotFailed() async throws {
        let posted = PostedIDs()
        let (_, endpoint) = try remote { _, target, body in
            guard target.contains("_bulk_docs") else { return (404, #"{"error":"not_found","reason":"missing"}"#) }
            if body.count > 3000 { return (413, #"{"error":"too_large","reason":"the request entity is too large"}"#) }
            let docs = (try? JSON(parsing: body))?["docs"]?.arrayValue ?? []
            let ids = docs.compactMap { $0["_id"]?.stringValue }
            posted.add(ids)
            return (201, JSON.array(ids.map { ["ok": true, "id": .string($0), "rev": "1-a"] }).serialized())
        }
        let filler = String(repeating: "x", count: 1000)
        var revisions = (0..<8).map { ReplicatedRevision(id: "d\($0)", revision: RevisionID("1-a")!, json: ["_id": .string("d\($0)"), "_rev": "1-a", "f": .string(filler)]) }
        revisions.append(ReplicatedRevision(id: "big", revision: RevisionID("1-a")!, json: ["_id": "big", "_rev": "1-a", "f": .string(filler + filler + filler + filler)]))
        let failures = try await endpoint.write(revisions)
        XCTAssertEqual(failures.map(\.id), ["big"])
        XCTAssertEqual(failures.first?.error, "too_large")
        XCTAssertEqual(posted.ids.sorted(), (0..<8).map { "d\($0)" })
    }

    /// A revision the source cannot give stops the replication before its checkpoint passes it.
    func testAFetchFailureIsNeverCheckpointedPast() async throws {
        let (_, source) = try remote { method, target, body in
            if target.hasPrefix("/db/_local/") { return method == "GET" ? (404, #"{"error":"not_found","reason":"missing"}"#) : (201, #"{"ok":true,"rev":"0-1"}"#) }
            if target.hasPrefix("/db/_changes") {
                return (200, #"{"results":[{"seq":1,"id":"a","changes":[{"rev":"1-a"}]},{"seq":2,"id":"b","changes":[{"rev":"1-b"}]}],"last_seq":2,"pending":0}"#)
            }
            if target.hasPrefix("/db/_bulk_get") {
                let asked = ((try? JSON(parsing: body))?["docs"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
                let results = asked.map { id in
                    id == "a" ? #"{"id":"a","docs":[{"ok":{"_id":"a","_rev":"1-a","_revisions":{"start":1,"ids":["a"]}}}]}"#
                        : #"{"id":"b","docs":[{"error":{"id":"b","rev":"1-b","error":"internal_server_error","reason":"disk read failed"}}]}"#
                }
                return (200, #"{"results":["# + results.joined(separator: ",") + "]}")
            }
            if target == "/db/" || target == "/db" { return (200, #"{"db_name":"db","uuid":"hostile-source","update_seq":2}"#) }
            return (404, #"{"error":"not_found","reason":"missing"}"#)
        }
        let directory = try TemporaryDirectory(prefix: "syncd-fetch-failure")
        let catalog = try Catalog(directory: directory.path)
        addTeardownBlock {
            catalog.close()
            directory.remove()
        }
        var configuration = ReplicationConfiguration(source: source, target: LocalEndpoint(try catalog.create("copy")))
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(10), oneShotAttempts: 2)
        let status = await Replicator(configuration).run()
        XCTAssertNotNil(status.lastError)
        XCTAssertTrue(status.lastError?.reason.contains("disk read failed") == true, "\(String(describing: status.lastError))")
        XCTAssertNotEqual(status.checkpointedSequence, ChangeSequence(.number(2)))
        XCTAssertNotEqual(status.checkpointedSequence, ChangeSequence(.string("2")))
    }
}

/// The ids a fake target was sent.
private final class PostedIDs: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ ids: [String]) { lock.withLock { list += ids } }
    var ids: [String] { lock.withLock { list } }
}

/// Counts the batches a feed delivered.
private final class BatchCount: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int { lock.withLock { value += 1; return value } }
}

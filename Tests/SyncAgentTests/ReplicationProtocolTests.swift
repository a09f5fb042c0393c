import AsyncHTTPClient
import Foundation
import JSON
import Store
@testable import SyncAgent
import XCTest

/// "CouchDB Replication Protocol" (version 3), step by step: each test sends the
/// requests a replicator sends at one step of the specification's algorithm to
/// syncd's listener and checks the answers the specification describes; the
/// last one checks syncd's replicator leaves what the specification's final
/// step requires. The couchdb3 client library is run against the listener in
/// ``ListenerThirdPartyClientTests``.
final class ReplicationProtocolTests: XCTestCase {
    private func encoded(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }

    /// Two databases on one listener: `source` with two documents, `target` empty.
    private func peers() async throws -> (server: TestListener, source: String, target: String) {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/source").status, 201)
        _ = try await HTTP.json(.PUT, server.url + "/source/a", ["n": 1])
        _ = try await HTTP.json(.PUT, server.url + "/source/b", ["n": 2])
        return (server, server.url + "/source", server.url + "/target")
    }

    /// 2.4.2.1 Verify Peers: `HEAD /source` is 200; `HEAD /target` of a missing
    /// database is 404 and `PUT /target` creates it (create_target).
    func testVerifyPeers() async throws {
        let (_, source, target) = try await peers()
        let head = try await HTTP.request(.HEAD, source)
        XCTAssertEqual(head.status, 200)
        XCTAssertTrue(head.body.isEmpty)
        try await assertEqual(try await HTTP.request(.HEAD, target).status, 404)
        let created = try await HTTP.json(.PUT, target)
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(created.json["ok"], true)
        try await assertEqual(try await HTTP.json(.PUT, target).status, 412)
        try await assertEqual(try await HTTP.request(.HEAD, target).status, 200)
    }

    /// 2.4.2.2 Get Peers Information: `GET /source` carries `instance_start_time`
    /// and `update_seq`; `GET /` is a CouchDB welcome with the server's `uuid`.
    func testGetPeersInformation() async throws {
        let (server, source, _) = try await peers()
        let info = try await HTTP.json(.GET, source)
        XCTAssertEqual(info.status, 200)
        XCTAssertEqual(info.json["db_name"], "source")
        XCTAssertEqual(info.json["update_seq"], 2)
        XCTAssertNotNil(info.json["instance_start_time"]?.stringValue)
        let welcome = try await HTTP.json(.GET, server.url + "/").json
        XCTAssertEqual(welcome["couchdb"], "Welcome")
        XCTAssertEqual(welcome["version"]?.stringValue?.first, "3")
        XCTAssertNotNil(welcome["uuid"]?.stringValue)
    }

    /// 2.4.2.3 Find Common Ancestry: the replication log `GET /{db}/_local/{id}` is
    /// 404 `not_found` before any replication, and `PUT` stores it for the next one.
    func testFindCommonAncestry() async throws {
        let (_, source, _) = try await peers()
        let missing = try await HTTP.json(.GET, source + "/_local/replication-id")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.json["error"], "not_found")
        let log: JSON = ["session_id": "s1", "source_last_seq": 2, "replication_id_version": 3,
                         "history": [["session_id": "s1", "recorded_seq": 2, "docs_written": 2]]]
        let stored = try await HTTP.json(.PUT, source + "/_local/replication-id", log)
        XCTAssertEqual(stored.status, 201)
        XCTAssertEqual(stored.json["id"], "_local/replication-id")
        XCTAssertEqual(stored.json["rev"], "0-1")
        let read = try await HTTP.json(.GET, source + "/_local/replication-id").json
        XCTAssertEqual(read["session_id"], "s1")
        XCTAssertEqual(read["history"]?.arrayValue?.first?["recorded_seq"], 2)
        XCTAssertEqual(read["_rev"], "0-1")
    }

    /// 2.4.2.4 Locate Changed Documents: `_changes?feed=normal&style=all_docs&since=0`
    /// lists each document with its leaves and `last_seq`; `_revs_diff` names the
    /// revisions the target lacks and their possible ancestors.
    func testLocateChangedDocuments() async throws {
        let (_, source, target) = try await peers()
        let changes = try await HTTP.json(.GET, source + "/_changes?feed=normal&style=all_docs&since=0&timeout=10000")
        XCTAssertEqual(changes.status, 200)
        let results = try XCTUnwrap(changes.json["results"]?.arrayValue)
        XCTAssertEqual(results.map { $0["id"] }, ["a", "b"])
        XCTAssertNotNil(results.first?["changes"]?.arrayValue?.first?["rev"]?.stringValue)
        XCTAssertEqual(changes.json["last_seq"], 2)
        let since = try await HTTP.json(.GET, source + "/_changes?since=1")
        XCTAssertEqual(since.json["results"]?.arrayValue?.map { $0["id"] }, ["b"])

        _ = try await HTTP.json(.PUT, target)
        let revA = try XCTUnwrap(results.first?["changes"]?.arrayValue?.first?["rev"])
        _ = try await HTTP.json(.POST, target + "/_bulk_docs", ["new_edits": false, "docs": [["_id": "a", "_rev": revA, "n": 1]]])
        let diff = try await HTTP.json(.POST, target + "/_revs_diff", ["a": [revA, "2-aaaa"], "b": ["1-bbbb"]])
        XCTAssertEqual(diff.status, 200)
        XCTAssertEqual(diff.json["a"]?["missing"], ["2-aaaa"])
        XCTAssertEqual(diff.json["a"]?["possible_ancestors"], [revA])
        XCTAssertEqual(diff.json["b"]?["missing"], ["1-bbbb"])
    }

    /// 2.4.2.5 Replicate Changes: fetch with `_bulk_get` (or `open_revs`), upload with
    /// `_bulk_docs` `new_edits: false` (201, no entry for a stored revision), commit with
    /// `_ensure_full_commit` (201 with `instance_start_time`), record the checkpoint.
    func testReplicateChanges() async throws {
        let (_, source, target) = try await peers()
        _ = try await HTTP.json(.PUT, target)
        let changes = try await HTTP.json(.GET, source + "/_changes?style=all_docs").json["results"]?.arrayValue ?? []
        let requests: [JSON] = changes.map { ["id": $0["id"]!, "rev": $0["changes"]!.arrayValue!.first!["rev"]!] }
        let fetched = try await HTTP.json(.POST, source + "/_bulk_get?revs=true&latest=true&attachments=false", ["docs": .array(requests)])
        XCTAssertEqual(fetched.status, 200)
        let docs = (fetched.json["results"]?.arrayValue ?? []).compactMap { $0["docs"]?.arrayValue?.first?["ok"] }
        XCTAssertEqual(docs.count, 2)
        XCTAssertEqual(docs.first?["_revisions"]?["start"], 1)

        let open = try await HTTP.json(.GET, source + "/a?revs=true&latest=true&open_revs=" + encoded("[\"\(docs[0]["_rev"]!.stringValue!)\"]"))
        XCTAssertEqual(open.json.arrayValue?.first?["ok"]?["_id"], "a")

        let uploaded = try await HTTP.json(.POST, target + "/_bulk_docs", ["new_edits": false, "docs": .array(docs)])
        XCTAssertEqual(uploaded.status, 201)
        XCTAssertEqual(uploaded.json, [])
        let commit = try await HTTP.json(.POST, target + "/_ensure_full_commit", [:])
        XCTAssertEqual(commit.status, 201)
        XCTAssertEqual(commit.json["ok"], true)
        XCTAssertNotNil(commit.json["instance_start_time"]?.stringValue)
        try await assertEqual(try await HTTP.json(.GET, target).json["doc_count"], 2)
        let again = try await HTTP.json(.POST, target + "/_revs_diff", ["a": [docs[0]["_rev"]!]])
        XCTAssertEqual(again.json, [:])
    }

    /// The whole algorithm by syncd's replicator between two listeners, ending with
    /// "Record Replication Checkpoint": both peers hold `_local/<replication id>` with
    /// the same `session_id`, `source_last_seq` at the source's sequence, and a history.
    func testReplicatorRecordsTheCheckpointOnBothPeers() async throws {
        let (server, source, target) = try await peers()
        let sourceEndpoint = try RemoteEndpoint(url: source)
        let targetEndpoint = try RemoteEndpoint(url: target)
        var configuration = ReplicationConfiguration(source: sourceEndpoint, target: targetEndpoint)
        configuration.createTarget = true
        let status = await Replicator(configuration).run()
        XCTAssertNil(status.lastError)
        XCTAssertEqual(status.docsWritten, 2)
        let id = ReplicationID(sourceIdentity: try await sourceEndpoint.identity(), targetIdentity: try await targetEndpoint.identity(),
                               sourceIsLocal: false, targetIsLocal: false, filter: nil)
        await sourceEndpoint.shutdown()
        await targetEndpoint.shutdown()
        let onSource = try await HTTP.json(.GET, source + "/_local/" + id.value).json
        let onTarget = try await HTTP.json(.GET, target + "/_local/" + id.value).json
        XCTAssertNotNil(onSource["session_id"]?.stringValue)
        XCTAssertEqual(onSource["session_id"], onTarget["session_id"])
        XCTAssertEqual(onSource["source_last_seq"], onTarget["source_last_seq"])
        XCTAssertEqual(onSource["source_last_seq"]?.intValue ?? Int(onSource["source_last_seq"]?.stringValue ?? ""), 2)
        XCTAssertEqual(onTarget["history"]?.arrayValue?.first?["docs_written"], 2)
        try await assertEqual(try await HTTP.json(.GET, server.url + "/target").json["doc_count"], 2)
    }
}

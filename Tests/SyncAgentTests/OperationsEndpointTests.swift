import Foundation
import Logging
import Store
import SyncAgent
import XCTest

/// The listener's operations endpoints: CouchDB's `_active_tasks` and
/// `_scheduler/*` over the replications registered with ``ActiveTasks``, and
/// the Prometheus metrics at `/_node/_local/_prometheus`.
final class OperationsEndpointTests: XCTestCase {
    override func setUp() {
        SyncdMetrics.bootstrap()
    }

    func testActiveTasksAndSchedulerShowARegisteredReplication() async throws {
        let server = try await startListener(users: ["bob": "bob-password"])
        let source = try server.catalog.create("tasks-a")
        let target = try server.catalog.create("tasks-b")
        try await source.putDocuments(count: 25, prefix: "doc")
        var configuration = ReplicationConfiguration(source: LocalEndpoint(source), target: LocalEndpoint(target))
        configuration.continuous = true
        let replicator = Replicator(configuration)
        let id = server.listener.node.activeTasks.register(replicator)
        replicator.start()
        for await status in replicator.statusUpdates() where status.activity == .idle && status.docsWritten == 25 { break }

        let (status, tasks) = try await HTTP.json(.GET, server.url + "/_active_tasks")
        XCTAssertEqual(status, 200)
        let task = try XCTUnwrap(tasks.arrayValue?.first, "\(tasks)")
        XCTAssertEqual(tasks.arrayValue?.count, 1)
        XCTAssertEqual(task["type"], "replication")
        XCTAssertEqual(task["replication_id"], .string(id))
        XCTAssertTrue(id.hasSuffix("+continuous"))
        XCTAssertEqual(task["continuous"], true)
        XCTAssertEqual(task["database"], "tasks-a")  // between two local databases, the source
        XCTAssertEqual(task["source"], "local database tasks-a")
        XCTAssertEqual(task["target"], "local database tasks-b")
        XCTAssertEqual(task["docs_read"], 25)
        XCTAssertEqual(task["docs_written"], 25)
        XCTAssertEqual(task["doc_write_failures"], 0)
        XCTAssertEqual(task["changes_pending"], 0)
        XCTAssertEqual(task["revisions_checked"], 25)
        XCTAssertEqual(task["missing_revisions_found"], 25)
        XCTAssertEqual(task["through_seq"], .number(Double(try source.info().updateSequence)))
        XCTAssertNotNil(task["started_on"]?.intValue)

        let (jobsStatus, jobs) = try await HTTP.json(.GET, server.url + "/_scheduler/jobs")
        XCTAssertEqual(jobsStatus, 200)
        XCTAssertEqual(jobs["total_rows"], 1)
        XCTAssertEqual(jobs["offset"], 0)
        let job = try XCTUnwrap(jobs["jobs"]?.arrayValue?.first, "\(jobs)")
        XCTAssertEqual(job["id"], .string(id))
        XCTAssertEqual(job["info"]?["docs_written"], 25)
        XCTAssertEqual(job["history"]?.arrayValue?.compactMap { $0["type"]?.stringValue }, ["added", "started"])

        let (docsStatus, docs) = try await HTTP.json(.GET, server.url + "/_scheduler/docs")
        XCTAssertEqual(docsStatus, 200)
        let doc = try XCTUnwrap(docs["docs"]?.arrayValue?.first, "\(docs)")
        XCTAssertEqual(doc["state"], "running")
        XCTAssertEqual(doc["error_count"], 0)
        XCTAssertEqual(doc["info"]?["docs_read"], 25)
        let (_, skipped) = try await HTTP.json(.GET, server.url + "/_scheduler/docs?skip=1")
        XCTAssertEqual(skipped["docs"], [])
        XCTAssertEqual(skipped["total_rows"], 1)
        try await assertEqual(try await HTTP.json(.GET, server.url + "/_scheduler/docs?limit=x").status, 400)

        // Server admins only, as in CouchDB.
        for path in ["/_active_tasks", "/_scheduler/jobs", "/_scheduler/docs", "/_node/_local/_prometheus"] {
            let (anonymous, body) = try await HTTP.json(.GET, server.anonymousURL + path)
            XCTAssertEqual(anonymous, 401, path)
            XCTAssertEqual(body["error"], "unauthorized", path)
            try await assertEqual(try await HTTP.json(.GET, server.url.replacingOccurrences(of: "admin:admin-password", with: "bob:bob-password") + path).status,
                                  403, path)
            try await assertEqual(try await HTTP.json(.POST, server.url + path, [:]).status, 405, path)
        }

        // A stopped replication leaves the registry.
        await replicator.stop()
        var remaining = try await HTTP.json(.GET, server.url + "/_active_tasks").json
        for _ in 0..<500 where remaining != [] {
            try await Task.sleep(for: .milliseconds(10))
            remaining = try await HTTP.json(.GET, server.url + "/_active_tasks").json
        }
        XCTAssertEqual(remaining, [])
    }

    func testTasksNeverShowCredentials() async throws {
        let server = try await startListener()
        let local = try server.catalog.create("private")
        let remote = RemoteEndpoint(RemoteEndpoint.Configuration(url: try RemoteURL("http://alice:s3cret-pw@127.0.0.1:9/notes"),
                                                                 connectTimeout: .seconds(1)))
        var configuration = ReplicationConfiguration(source: LocalEndpoint(local), target: remote)
        configuration.continuous = true
        let replicator = Replicator(configuration)
        server.listener.node.activeTasks.register(replicator)
        replicator.start()
        for await status in replicator.statusUpdates() where status.activity == .offline { break }
        for path in ["/_active_tasks", "/_scheduler/jobs", "/_scheduler/docs"] {
            let answer = try await HTTP.request(.GET, server.url + path)
            XCTAssertEqual(answer.status, 200)
            XCTAssertFalse(answer.text.contains("s3cret"), answer.text)
            XCTAssertTrue(answer.text.contains("http://127.0.0.1:9/notes"), answer.text)
        }
        let (_, docs) = try await HTTP.json(.GET, server.url + "/_scheduler/docs")
        XCTAssertEqual(docs["docs"]?.arrayValue?.first?["state"], "crashing")
        XCTAssertNotNil(docs["docs"]?.arrayValue?.first?["info"]?["error"]?.stringValue)
        await replicator.stop()
        await remote.shutdown()
    }

    func testPrometheusMetrics() async throws {
        let server = try await startListener()
        // A scraper's user with CouchDB's role `_metrics` reads the metrics and nothing else.
        try server.listener.node.users.setPassword("scrape-pw", for: "scraper", roles: ["_metrics"])
        let scraper = server.url.replacingOccurrences(of: "admin:admin-password", with: "scraper:scrape-pw")
        try await assertEqual(try await HTTP.request(.GET, scraper + "/_node/_local/_prometheus").status, 200)
        try await assertEqual(try await HTTP.json(.GET, scraper + "/_active_tasks").status, 403)
        try await assertEqual(try await HTTP.json(.GET, scraper + "/_all_dbs").status, 403)
        _ = try await HTTP.json(.PUT, server.url + "/metrics-db")
        _ = try await HTTP.json(.PUT, server.url + "/metrics-db/a-secret-doc-id", ["v": 1])
        let source = try server.catalog.database("metrics-db")
        let target = try server.catalog.create("metrics-copy")
        let replicator = Replicator(ReplicationConfiguration(source: LocalEndpoint(source), target: LocalEndpoint(target)))
        server.listener.node.activeTasks.register(replicator)
        let final = await replicator.run()
        XCTAssertEqual(final.docsWritten, 1)
        SyncdMetrics.peersOnline(2)
        // A store opened by a Node times its commits.
        var options = Database.Options()
        options.commitObserver = SyncdMetrics.storeCommitObserver
        let directory = try TemporaryDirectory(prefix: "syncd-commits")
        defer { directory.remove() }
        let timed = try Catalog(directory: directory.path, options: options)
        defer { timed.close() }
        _ = try await timed.create("timed").put(["_id": "x"])

        let answer = try await HTTP.request(.GET, server.url + "/_node/_local/_prometheus")
        XCTAssertEqual(answer.status, 200)
        XCTAssertTrue(answer.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") ?? false, "\(answer.headers)")
        let text = answer.text
        for expected in [
            "syncd_replication_docs_read_total ", "syncd_replication_docs_written_total ", "syncd_replication_doc_write_failures_total ",
            "syncd_replications{state=\"stopped\"}", "syncd_peers_online 2", "syncd_store_commit_duration_bucket",
            "http_server_request_duration_bucket{", "http_route=\"/{db}/{docid}\"", "http_request_method=\"PUT\"",
            "http_response_status_code=\"201\"",
        ] {
            XCTAssertTrue(text.contains(expected), "no \(expected) in:\n\(text)")
        }
        // Labels are route templates: no database or document names.
        XCTAssertFalse(text.contains("a-secret-doc-id"))
        XCTAssertFalse(text.contains("metrics-db"))
        let written = text.split(separator: "\n").first { $0.hasPrefix("syncd_replication_docs_written_total ") }
        XCTAssertGreaterThanOrEqual(Int(written?.split(separator: " ").last ?? "") ?? 0, 1)
    }
}

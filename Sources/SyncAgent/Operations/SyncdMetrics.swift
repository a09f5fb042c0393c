import Metrics
import class Prometheus.PrometheusCollectorRegistry
import struct Prometheus.PrometheusMetricsFactory

/// The process's metrics, recorded through swift-metrics and exported in
/// Prometheus's text format at `GET /_node/_local/_prometheus` (CouchDB's path).
///
/// Every module records with swift-metrics' `Counter`, `Gauge` and `Timer`;
/// ``bootstrap()`` (once, in the command line, before anything records) sends
/// them to ``registry``. Without it they go nowhere and the export is empty.
///
/// | Metric | Kind | Recorded by |
/// |---|---|---|
/// | `syncd_replication_docs_read_total`, `…_docs_written_total`, `…_doc_write_failures_total` | counter | ``ActiveTasks`` |
/// | `syncd_replications{state}` (active, idle, offline, stopped) | gauge | ``ActiveTasks`` |
/// | `syncd_peers_online` | gauge | ``peersOnline(_:)`` (the agent) |
/// | `http_server_request_duration{http_route,http_request_method,http_response_status_code}`, `hb_requests` | histogram, counter | the listener (Hummingbird's `MetricsMiddleware`) |
/// | `syncd_listener_connections_cut_total{reason}` (handshake_timeout, request_head_timeout, request_body_timeout, pending_full, stranger_displaced, connections_full) | counter | the listener (`ConnectionCuts`) |
/// | `syncd_store_commit_duration` | histogram (seconds) | ``storeCommitObserver`` (the store's group commits) |
public enum SyncdMetrics {
    /// Where the metrics are kept and exported from.
    public static let registry = PrometheusCollectorRegistry()

    /// Sends swift-metrics to ``registry``. Safe to call more than once: only the first call counts.
    public static func bootstrap() {
        _ = bootstrapped
    }

    private static let bootstrapped: Void = {
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    }()

    /// The metrics in Prometheus's text exposition format (version 0.0.4).
    public static func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }

    /// Records how many paired peers are online now.
    public static func peersOnline(_ count: Int) {
        Gauge(label: "syncd_peers_online").record(count)
    }

    /// Records each store group commit's duration; give it to `Database.Options.commitObserver`.
    public static let storeCommitObserver: @Sendable (Duration) -> Void = { duration in
        Timer(label: "syncd_store_commit_duration", preferredDisplayUnit: .seconds).record(duration: duration)
    }
}

/// The replication counters and state gauges, fed by ``ActiveTasks`` with each
/// status change of a registered replication.
struct ReplicationMetrics: Sendable {
    private let read = Counter(label: "syncd_replication_docs_read_total")
    private let written = Counter(label: "syncd_replication_docs_written_total")
    private let failed = Counter(label: "syncd_replication_doc_write_failures_total")
    private let states: [ReplicationActivity: Gauge] = Dictionary(uniqueKeysWithValues: [
        ReplicationActivity.active, .idle, .offline, .stopped,
    ].map { ($0, Gauge(label: "syncd_replications", dimensions: [("state", $0.rawValue)])) })

    /// Counts what a replication did between two of its statuses (`nil` before its
    /// first and after its last), and sets the gauges from `counts`.
    func counted(from before: ReplicationStatus?, to after: ReplicationStatus?, states counts: [ReplicationActivity: Int]) {
        if let after {
            let start = before ?? after
            read.increment(by: max(0, after.docsRead - start.docsRead))
            written.increment(by: max(0, after.docsWritten - start.docsWritten))
            failed.increment(by: max(0, after.docWriteFailures - start.docWriteFailures))
        }
        for (state, gauge) in states { gauge.record(counts[state, default: 0]) }
    }
}

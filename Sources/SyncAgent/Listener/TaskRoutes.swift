import FoundationEssentials
import Hummingbird
import JSON
import Store

/// What this process is doing, in CouchDB 3.x's formats so tools that watch
/// CouchDB replications and scrape its metrics watch syncd's: `_active_tasks`,
/// `_scheduler/jobs`, `_scheduler/docs` and `_node/_local/_prometheus`, all for
/// server admins only (see `Auth/Authorization.swift`).
///
/// syncd has no `_replicator` database: `database` names the local database a
/// replication serves, `doc_id` is null, and the replication's id is this process's.
extension CouchResponder {
    func activeTasks() -> Response {
        Self.json(.array(listener.node.activeTasks.all.map { task in
            var entry = Self.counts(task.status)
            entry["type"] = "replication"
            entry["replication_id"] = .string(task.id)
            entry["node"] = .string(listener.node.name)
            entry["database"] = task.database.map { .string($0) } ?? .null
            entry["doc_id"] = .null
            entry["user"] = .null
            entry["source"] = .string(task.source)
            entry["target"] = .string(task.target)
            entry["continuous"] = .bool(task.continuous)
            entry["started_on"] = .number(task.started.timeIntervalSince1970.rounded(.down))
            entry["updated_on"] = .number(task.updated.timeIntervalSince1970.rounded(.down))
            return .object(entry)
        }))
    }

    func schedulerJobs(_ exchange: Exchange) throws -> Response {
        let (tasks, offset, total) = try page(exchange)
        return Self.json(["total_rows": .number(Double(total)), "offset": .number(Double(offset)), "jobs": .array(tasks.map { task in
            var history: [JSON] = [["timestamp": Self.time(task.started), "type": "added"],
                                   ["timestamp": Self.time(task.started), "type": "started"]]
            if let error = task.status.lastError {
                history.insert(["timestamp": Self.time(task.updated), "type": "crashed", "reason": .string(error.description)], at: 0)
            }
            return Self.job(task, [
                "history": .array(history),
                "info": .object(Self.counts(task.status)),
                "pid": .null,
                "user": .null,
            ])
        })])
    }

    func schedulerDocs(_ exchange: Exchange) throws -> Response {
        let (tasks, offset, total) = try page(exchange)
        return Self.json(["total_rows": .number(Double(total)), "offset": .number(Double(offset)), "docs": .array(tasks.map { task in
            var info = Self.counts(task.status)
            if let error = task.status.lastError { info["error"] = .string(error.description) }
            return Self.job(task, [
                "state": .string(Self.schedulerState(task.status)),
                "error_count": .number(task.status.lastError == nil ? 0 : 1),
                "info": .object(info),
                "last_updated": Self.time(task.updated),
                "source_proxy": .null,
                "target_proxy": .null,
            ])
        })])
    }

    func prometheus() -> Response {
        Self.bytesResponse(SyncdMetrics.exposition(), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }

    /// The tasks a `skip`/`limit` query asks for, the offset, and the total.
    private func page(_ exchange: Exchange) throws -> ([ActiveTasks.Replication], Int, Int) {
        let all = listener.node.activeTasks.all
        let skip = try exchange.query.integer("skip") ?? 0
        let limit = try exchange.query.integer("limit") ?? all.count
        guard skip >= 0, limit >= 0 else { throw CouchError.badRequest("skip and limit must not be negative") }
        return (Array(all.dropFirst(skip).prefix(limit)), skip, all.count)
    }

    /// The fields `_scheduler/jobs` and `_scheduler/docs` share, plus `extra`.
    private static func job(_ task: ActiveTasks.Replication, _ extra: JSON.Object) -> JSON {
        var entry: JSON.Object = [
            "id": .string(task.id),
            "database": task.database.map { .string($0) } ?? .null,
            "doc_id": .null,
            "node": .null,
            "source": .string(task.source),
            "target": .string(task.target),
            "start_time": time(task.started),
        ]
        for (key, value) in extra { entry[key] = value }
        return .object(entry)
    }

    /// The replication statistics CouchDB reports (`info`, and in `_active_tasks`).
    private static func counts(_ status: ReplicationStatus) -> JSON.Object {
        [
            "docs_read": .number(Double(status.docsRead)),
            "docs_written": .number(Double(status.docsWritten)),
            "doc_write_failures": .number(Double(status.docWriteFailures)),
            "revisions_checked": .number(Double(status.revisionsChecked)),
            "missing_revisions_found": .number(Double(status.missingRevisionsFound)),
            "changes_pending": status.changesPending.map { .number(Double($0)) } ?? .null,
            "checkpointed_source_seq": status.checkpointedSequence?.value ?? .null,
            "through_seq": status.throughSequence?.value ?? .null,
        ]
    }

    /// CouchDB's scheduler state of a replication: `running` (active or idle),
    /// `crashing` (offline, retrying), `failed` (stopped by an error) or `completed`.
    static func schedulerState(_ status: ReplicationStatus) -> String {
        switch status.activity {
        case .active, .idle: "running"
        case .offline: "crashing"
        case .stopped: status.lastError == nil ? "completed" : "failed"
        }
    }

    /// `2017-04-29T05:01:37Z`
    private static func time(_ date: Date) -> JSON {
        .string(date.formatted(.iso8601))
    }
}

import FoundationEssentials
import JSON
import Store

/// Reads and writes a replication's checkpoint, `_local/<replication id>`, on
/// both sides, in the form CouchDB's replicator uses (`session_id`,
/// `source_last_seq`, `history`).
///
/// At the start it compares the two sides' checkpoints to find a sequence both
/// agree was reached; a side that lost its checkpoint, or holds one from a
/// different session, restarts from the newest session both histories share.
/// A write that meets 409 (someone else updated the checkpoint) re-reads the
/// current revision and retries. A source that refuses the checkpoint (401 or
/// 403: a read-only source) does not stop the replication: as PouchDB does,
/// the checkpoint is then kept on the target alone.
public actor Checkpointer {
    /// What the replication did in this session, recorded in the history.
    public struct Statistics: Sendable, Hashable {
        /// Revisions checked with `_revs_diff`.
        public var missingChecked = 0
        /// Revisions found missing.
        public var missingFound = 0
        /// Revisions read from the source.
        public var docsRead = 0
        /// Revisions written to the target.
        public var docsWritten = 0
        /// Revisions that failed.
        public var docWriteFailures = 0

        /// Zero counts.
        public init() {}
    }

    /// The checkpoint documents' id (without `_local/`).
    public nonisolated let replicationID: ReplicationID
    /// This session's id, new for each run.
    public nonisolated let sessionID: String
    private let source: any Endpoint
    private let target: any Endpoint
    private let startTime: String
    private var startSequence = ChangeSequence.zero
    /// Each side's current `_rev`, nil when it has no checkpoint.
    private var revisions: [Side: String] = [:]
    /// The history both sides held at the start.
    private var history: [JSON] = []
    private var lastSaved: ChangeSequence?
    /// Whether the source refused a checkpoint write (401 or 403), so the target's alone counts.
    public private(set) var sourceIsReadOnly = false

    private enum Side: Hashable { case source, target }

    /// A checkpointer for one session of a replication.
    public init(replicationID: ReplicationID, source: any Endpoint, target: any Endpoint, sessionID: String = UUID().uuidString.lowercased()) {
        self.replicationID = replicationID
        self.source = source
        self.target = target
        self.sessionID = sessionID
        startTime = Date().formatted(.iso8601)
    }

    /// Reads both checkpoints and returns the sequence to start from.
    public func start() async throws(EndpointError) -> ChangeSequence {
        let sourceLog = try await source.localDocument(id: replicationID.value)
        let targetLog = try await target.localDocument(id: replicationID.value)
        revisions[.source] = sourceLog?["_rev"]?.stringValue
        revisions[.target] = targetLog?["_rev"]?.stringValue
        if sourceLog == nil, let targetLog, let sequence = targetLog["source_last_seq"], try await !sourceAcceptsCheckpoints() {
            startSequence = ChangeSequence(sequence)
            history = targetLog["history"]?.arrayValue ?? []
        } else {
            startSequence = Self.compare(source: sourceLog, target: targetLog)
            history = sourceLog?["history"]?.arrayValue ?? []
        }
        lastSaved = startSequence
        return startSequence
    }

    /// Whether the source takes a checkpoint: PouchDB's test when only the target
    /// has one, by writing one that matches nothing (so the replication starts over).
    private func sourceAcceptsCheckpoints() async throws(EndpointError) -> Bool {
        do {
            try await write(["session_id": .string(sessionID), "source_last_seq": 0, "history": []], to: .source)
            return true
        } catch where error.isForbidden {
            sourceIsReadOnly = true
            return false
        }
    }

    /// The sequence both checkpoints agree on: CouchDB's comparison of replication logs.
    public static func compare(source: JSON?, target: JSON?) -> ChangeSequence {
        guard let source, let target else { return .zero }
        if let session = source["session_id"]?.stringValue, session == target["session_id"]?.stringValue,
           let sequence = source["source_last_seq"] {
            return ChangeSequence(sequence)
        }
        let targetSessions = Set((target["history"]?.arrayValue ?? []).compactMap { $0["session_id"]?.stringValue })
        for entry in source["history"]?.arrayValue ?? [] {
            if let session = entry["session_id"]?.stringValue, targetSessions.contains(session), let recorded = entry["recorded_seq"] {
                return ChangeSequence(recorded)
            }
        }
        return .zero
    }

    /// Records that every change up to `sequence` is on the target: makes the
    /// target durable, then writes the checkpoint to the source and the target.
    public func save(_ sequence: ChangeSequence, statistics: Statistics) async throws(EndpointError) {
        if sequence == lastSaved { return }
        try await target.ensureFullCommit()
        let entry: JSON = .object([
            "session_id": .string(sessionID),
            "start_time": .string(startTime),
            "end_time": .string(Date().formatted(.iso8601)),
            "start_last_seq": startSequence.value,
            "end_last_seq": sequence.value,
            "recorded_seq": sequence.value,
            "missing_checked": .number(Double(statistics.missingChecked)),
            "missing_found": .number(Double(statistics.missingFound)),
            "docs_read": .number(Double(statistics.docsRead)),
            "docs_written": .number(Double(statistics.docsWritten)),
            "doc_write_failures": .number(Double(statistics.docWriteFailures)),
        ])
        let body: JSON.Object = [
            "session_id": .string(sessionID),
            "source_last_seq": sequence.value,
            "replication_id_version": .number(Double(ReplicationID.version)),
            "replicator": "syncd",
            "history": .array(Array(([entry] + history).prefix(ReplicatorTuning.checkpointHistoryLimit))),
        ]
        if !sourceIsReadOnly {
            do {
                try await write(body, to: .source)
            } catch where error.isForbidden {
                sourceIsReadOnly = true
            }
        }
        try await write(body, to: .target)
        lastSaved = sequence
    }

    /// Writes one side's checkpoint; on 409 re-reads its `_rev` and tries again.
    private func write(_ body: JSON.Object, to side: Side) async throws(EndpointError) {
        let endpoint = side == .source ? source : target
        var attempt = 0
        while true {
            var document = body
            if let revision = revisions[side] { document["_rev"] = .string(revision) }
            do {
                revisions[side] = try await endpoint.putLocalDocument(id: replicationID.value, .object(document))
                return
            } catch where error.isConflict && attempt < ReplicatorTuning.checkpointConflictRetries {
                attempt += 1
                revisions[side] = try await endpoint.localDocument(id: replicationID.value)?["_rev"]?.stringValue
            }
        }
    }
}

import CSQLite
import Dispatch
import Glibc
import Locking
import Synchronization

/// What a write job may change besides its own rows: the sequence counter and
/// the document counts, applied to the database's metadata once per commit.
struct WriteContext {
    let connection: Connection
    /// ``Database/Options/maximumLeaves``.
    let maximumLeaves: Int
    /// ``Database/Options/maximumTreeSize``.
    let maximumTreeSize: Int
    var lastSequence: UInt64
    var docCount: Int
    var deletedCount: Int
    var revsLimit: Int
    /// The database's Mango indexes: design documents written redefine them, and queries catch them up.
    var queryIndexes: [IndexEntries.Stored] = []

    /// SQLite's `data_version` when the counters were last known true: a commit
    /// by any other connection (another process on the same file) changes it.
    var dataVersion: Int64?
    /// Each document this transaction wrote, with its winner now (`nil` when purged), for
    /// ``RecentWinners`` once it commits.
    var winnersWritten: [String: RevisionID?] = [:]
    /// The rows written now are marked relayed: a group member's pull is writing
    /// (``Database/bulkDocs(_:newEdits:relayed:)``).
    var relayed = false
    /// Another connection committed since this one last wrote.
    var changedElsewhere = false

    /// The sequence for the next change, one past the last.
    mutating func nextSequence() -> UInt64 {
        lastSequence += 1
        return lastSequence
    }

    /// Inside the write transaction: reads the counters again from the file if another
    /// connection committed since they were read, so no sequence is issued twice.
    mutating func refreshIfChangedElsewhere() throws(StoreError) {
        let pragma = try connection.statement("PRAGMA data_version")
        defer { pragma.reset() }
        guard try pragma.step() else { return }
        let version = pragma.int64(0)
        defer { dataVersion = version }
        guard dataVersion != version else { return }
        if dataVersion != nil { changedElsewhere = true }
        let select = try connection.statement("SELECT key, value FROM meta WHERE key IN ('last_seq', 'doc_count', 'del_count', 'revs_limit')")
        defer { select.reset() }
        while try select.step() {
            let value = select.int64(1)
            switch select.string(0) {
            case "last_seq": lastSequence = UInt64(clamping: value)
            case "doc_count": docCount = Int(value)
            case "del_count": deletedCount = Int(value)
            default: revsLimit = Int(value)
            }
        }
        queryIndexes = try IndexEntries.load(from: connection)
    }
}

/// The one connection that writes, on a thread of its own.
///
/// Jobs submitted from any task queue up; the writer takes every job waiting
/// and runs them in one transaction (a group commit), each inside a savepoint
/// so one failing job leaves the others' work intact. Callers are resumed
/// only after the commit, so an acknowledged write is durable.
final class Writer: Sendable {
    private struct Job: Sendable {
        let work: @Sendable (inout WriteContext) throws -> any Sendable
        let complete: @Sendable (Result<any Sendable, any Error>) -> Void
    }

    private struct Queue: ~Copyable {
        var jobs: [Job] = []
        var draining = false
        var closed = false
    }

    /// The most jobs in one transaction; a bound on commit latency.
    static let maximumBatch = 512

    private let connection: Locked<WriteContext>
    private let queue = Locked(Queue())
    private let thread = DispatchQueue(label: "syncd.store.writer", qos: .userInitiated)
    private let committed: @Sendable (UInt64) -> Void
    private let commitObserver: (@Sendable (Duration) -> Void)?
    private let checkpointer: LogCheckpointer
    /// Told each commit's winners.
    private let recentWinners: RecentWinners
    /// Transactions committed so far: fewer than jobs when commits were grouped.
    let transactions = Atomic<Int>(0)

    /// Runs on the writer's thread when the write-ahead log has grown past `largeLog` bytes.
    private let logGrew: @Sendable (Connection) -> Void
    private let logPath: String
    /// The log size that calls for a reset; SQLite's own checkpoints cannot
    /// reset it while readers overlap without pause.
    static let largeLog = 64 << 20

    init(context: consuming sending WriteContext, logPath: String, checkpointer: LogCheckpointer, recentWinners: RecentWinners,
         committed: @escaping @Sendable (UInt64) -> Void, commitObserver: (@Sendable (Duration) -> Void)? = nil,
         logGrew: @escaping @Sendable (Connection) -> Void) {
        self.connection = Locked(context)
        self.commitObserver = commitObserver
        self.checkpointer = checkpointer
        self.recentWinners = recentWinners
        self.logPath = logPath
        self.committed = committed
        self.logGrew = logGrew
    }

    /// Queues `work` for the next group commit and returns at once, so the
    /// caller can go on working while the writer runs it.
    func submit<T: Sendable>(_ work: @escaping @Sendable (inout WriteContext) throws -> T) -> PendingWrite<T> {
        let pending = PendingWrite<T>()
        let job = Job(work: { context in try work(&context) }, complete: { pending.complete($0.map { $0 as! T }) })
        let start = queue.withLock { queue -> Bool? in
            if queue.closed { return nil }
            queue.jobs.append(job)
            if queue.draining { return false }
            queue.draining = true
            return true
        }
        switch start {
        case nil: pending.complete(.failure(StoreError.internal("the database is closed")))
        case true?: thread.async { self.drain() }
        case false?: break
        }
        return pending
    }

    /// Runs `work` alone, outside any transaction, after the queued jobs (for VACUUM and the like).
    func exclusive<T: Sendable>(_ work: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            thread.async {
                let result = Result { try self.connection.withLock { try work($0.connection) } }
                continuation.resume(with: result)
            }
        }
    }

    /// Frees the writer connection's unused page cache, after the jobs queued now,
    /// and hands the freed memory back to the system (malloc keeps it otherwise).
    func releaseMemory() {
        thread.async {
            self.connection.withLock { $0.connection.releaseMemory() }
            csqlite_return_freed_memory()
        }
    }

    /// Bytes of page cache the writer connection holds, once the jobs queued now have run.
    var cacheUsed: Int { thread.sync { connection.withLock { $0.connection.cacheUsed } } }

    /// Refuses new jobs; queued ones still run.
    func close() {
        queue.withLock { $0.closed = true }
        thread.sync {}
    }

    private func drain() {
        while true {
            let batch = queue.withLock { queue -> [Job] in
                let batch = Array(queue.jobs.prefix(Self.maximumBatch))
                queue.jobs.removeFirst(batch.count)
                if batch.isEmpty { queue.draining = false }
                return batch
            }
            if batch.isEmpty {
                checkpointer.writerIdle()
                return
            }
            let started = ContinuousClock.now
            let (results, sequence) = connection.withLock { context in run(batch, in: &context) }
            commitObserver?(ContinuousClock.now - started)
            for (job, result) in zip(batch, results) { job.complete(result) }
            if let sequence { committed(sequence) }
            if transactions.load(ordering: .relaxed) % 32 == 0 { checkLog() }
        }
    }

    private func checkLog() {
        var info = stat()
        guard stat(logPath, &info) == 0, Int(info.st_size) > Self.largeLog else { return }
        connection.withLock { logGrew($0.connection) }
    }

    /// One transaction for the whole batch. Returns each job's result and the
    /// last sequence if the commit changed it.
    private func run(_ batch: [Job], in context: inout WriteContext) -> ([Result<any Sendable, any Error>], UInt64?) {
        let before = context
        let db = context.connection
        do {
            try db.execute("BEGIN IMMEDIATE")
            try context.refreshIfChangedElsewhere()
        } catch {
            try? db.execute("ROLLBACK")
            context = before
            return (batch.map { _ in .failure(error) }, nil)
        }
        let saved = context
        var results: [Result<any Sendable, any Error>] = []
        results.reserveCapacity(batch.count)
        for job in batch {
            let before = context
            do {
                try db.execute("SAVEPOINT job")
                let value = try job.work(&context)
                db.resetStatements()
                try db.execute("RELEASE job")
                results.append(.success(value))
            } catch {
                db.resetStatements()
                try? db.execute("ROLLBACK TO job; RELEASE job")
                context = before
                results.append(.failure(error))
            }
        }
        do {
            if context.lastSequence != saved.lastSequence || context.docCount != saved.docCount
                || context.deletedCount != saved.deletedCount
            {
                let statement = try db.statement("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)")
                for (key, value) in [("last_seq", Int64(context.lastSequence)), ("doc_count", Int64(context.docCount)),
                                     ("del_count", Int64(context.deletedCount))]
                {
                    statement.reset()
                    statement.bind(key, at: 1)
                    statement.bind(value, at: 2)
                    try statement.run()
                }
                statement.reset()
            }
            try db.execute("COMMIT")
            transactions.add(1, ordering: .relaxed)
            checkpointer.logged(pages: db.takePagesWritten())
            if context.changedElsewhere { recentWinners.release() }
            recentWinners.committed(context.winnersWritten)
            context.winnersWritten.removeAll(keepingCapacity: true)
            context.changedElsewhere = false
        } catch {
            try? db.execute("ROLLBACK")
            context = saved
            return (batch.map { _ in .failure(error) }, nil)
        }
        return (results, context.lastSequence != saved.lastSequence ? context.lastSequence : nil)
    }
}

/// The result of a submitted write job, available once its transaction commits.
final class PendingWrite<T: Sendable>: Sendable {
    private struct State {
        var result: Result<T, any Error>?
        var waiter: CheckedContinuation<T, any Error>?
    }

    private let state = Locked(State())

    /// Sets the result and resumes the task waiting for it, if any.
    fileprivate func complete(_ result: Result<T, any Error>) {
        let waiter = state.withLock { state in
            state.result = result
            return state.waiter.take()
        }
        waiter?.resume(with: result)
    }

    /// The job's result, once committed.
    var value: T {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let result = state.withLock { state in
                    if state.result == nil { state.waiter = continuation }
                    return state.result
                }
                if let result { continuation.resume(with: result) }
            }
        }
    }
}

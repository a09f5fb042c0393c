import CSQLite
import Dispatch
import Locking

/// Copies committed pages from the write-ahead log into the database file on
/// a connection and thread of its own, so the writer does not spend its time
/// on it: SQLite's automatic checkpoint would run inside a commit. Writers and
/// readers go on while it runs (a passive checkpoint waits for no one).
///
/// Under a steady stream of commits such a checkpoint never quite catches up,
/// and SQLite starts the log afresh only after one that does; so every `limit`
/// pages the writer checkpoints once itself, between two transactions. When
/// the writer falls idle, a checkpoint copies what is left, after which
/// readers read the database file alone, without looking pages up in the log.
final class LogCheckpointer: Sendable {
    /// Pages written to the log between checkpoints, as SQLite's automatic checkpoint does.
    static let interval = 1000
    /// Pages written between the writer's own checkpoints.
    static let limit = 4 * interval

    private struct State {
        var pagesSinceCheckpoint = 0
        var pagesSinceCatchUp = 0
        var commits = 0
        var idleCheckPending = false
        var running = false
        var requested = false
    }

    private let connection: Locked<Connection?>
    private let state = Locked(State())
    private let thread = DispatchQueue(label: "syncd.store.checkpointer", qos: .utility)

    /// Opens its own connection to the database at `path`.
    init(path: String) throws(StoreError) {
        let connection = try Connection(path: path, readOnly: false)
        // Reading the header opens the log; until then a checkpoint does nothing.
        try connection.execute("PRAGMA journal_mode = WAL")
        self.connection = Locked(connection)
    }

    /// Called by the writer after each commit with the pages it wrote to the
    /// log; starts a checkpoint once `interval` pages have gathered.
    func logged(pages: Int) {
        enum Step { case none, background, catchUp }
        let step = state.withLock { state -> Step in
            state.commits += 1
            state.pagesSinceCatchUp += pages
            state.pagesSinceCheckpoint += pages
            if state.pagesSinceCatchUp >= Self.limit {
                state.pagesSinceCatchUp = 0
                state.pagesSinceCheckpoint = 0
                return .catchUp
            }
            guard state.pagesSinceCheckpoint >= Self.interval else { return .none }
            state.pagesSinceCheckpoint = 0
            if state.running {
                state.requested = true
                return .none
            }
            state.running = true
            return .background
        }
        switch step {
        case .none: break
        // Here, after a running checkpoint; the writer's next transaction then starts the log afresh.
        case .catchUp: checkpoint()
        case .background: thread.async { self.run() }
        }
    }

    /// Called by the writer when no job is waiting. Once no commit has come
    /// for a moment, checkpoints what has gathered in the log (256 KiB or more).
    func writerIdle() {
        let commits = state.withLock { state -> Int? in
            guard !state.idleCheckPending else { return nil }
            state.idleCheckPending = true
            return state.commits
        }
        if let commits { checkWhenQuiet(since: commits) }
    }

    private func checkWhenQuiet(since commits: Int) {
        thread.asyncAfter(deadline: .now() + .milliseconds(100)) {
            enum Next { case wait(Int), checkpoint, nothing }
            let next = self.state.withLock { state -> Next in
                if state.commits != commits { return .wait(state.commits) }
                state.idleCheckPending = false
                guard state.pagesSinceCheckpoint >= 64, !state.running else { return .nothing }
                state.pagesSinceCheckpoint = 0
                return .checkpoint
            }
            switch next {
            case .wait(let commits): self.checkWhenQuiet(since: commits)
            case .checkpoint: self.checkpoint()
            case .nothing: break
            }
        }
    }

    /// Waits for a running checkpoint and closes the connection.
    func close() {
        thread.sync {}
        connection.withLock { $0 = nil }
    }

    /// Checkpoints on the calling thread, after a running checkpoint if any.
    private func checkpoint() {
        connection.withLock { connection in
            guard let connection else { return }
            _ = sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        }
    }

    private func run() {
        while true {
            checkpoint()
            let again = state.withLock { state -> Bool in
                if state.requested {
                    state.requested = false
                    return true
                }
                state.running = false
                return false
            }
            if !again { return }
        }
    }
}

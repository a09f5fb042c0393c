import Glibc
import JSON
import Locking

/// One query server process (`syncd query-server`) and the pipes to it: commands go in one a
/// line, answers come back one a line, in order. A process serves one exchange at a time
/// (``QueryServers`` hands it out); what it said it holds (design documents by revision)
/// stays with it.
final class QueryProcess: Sendable {
    /// The process id, until it is stopped.
    let pid: pid_t
    private let input: Int32
    private let output: Int32
    private let state = Locked(State())

    private struct State {
        /// Design documents sent with `["ddoc", "new", ...]`: id → revision.
        var designs: [String: String] = [:]
        /// Bytes read past the last whole line.
        var pending: [UInt8] = []
        var stopped = false
    }

    /// Why an exchange ended before every answer came.
    enum Failure: Error, Equatable {
        /// No answer came within the bound: the process was killed.
        case timedOut
        /// The process ended (it crashed, or was killed by another hand).
        case exited(String)
        /// An answer was larger than any command's answer may be: the process was killed.
        case answerTooLarge
    }

    /// Starts `executable` with `arguments`, its standard input and output piped here and its
    /// standard error shared with this process.
    init(executable: String, arguments: [String]) throws(QueryServerError) {
        _ = Self.brokenPipesIgnored
        var toChild: [Int32] = [0, 0]
        var fromChild: [Int32] = [0, 0]
        guard pipe(&toChild) == 0 else { throw QueryServerError.cannotStart("pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&fromChild) == 0 else {
            close(toChild[0]); close(toChild[1])
            throw QueryServerError.cannotStart("pipe: \(String(cString: strerror(errno)))")
        }
        // Other children started meanwhile must not hold these pipes open (glibc's pipe2 is not exported to Swift).
        for descriptor in toChild + fromChild { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(toChild[0])
        close(fromChild[1])
        guard status == 0 else {
            close(toChild[1]); close(fromChild[0])
            throw QueryServerError.cannotStart("\(executable): \(String(cString: strerror(status)))")
        }
        self.pid = pid
        input = toChild[1]
        output = fromChild[0]
        _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK)
        _ = fcntl(output, F_SETFL, fcntl(output, F_GETFL) | O_NONBLOCK)
    }

    deinit { stop() }

    /// A write to a process that has ended fails with `EPIPE` instead of ending this one
    /// (SwiftNIO ignores `SIGPIPE` too, but only once it has made a socket).
    private static let brokenPipesIgnored: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Whether the process has been stopped (after a failure, or by ``stop()``).
    var isStopped: Bool { state.withLock(\.stopped) }

    /// The revision of design document `id` this process holds, if any.
    func designRevision(_ id: String) -> String? { state.withLock { $0.designs[id] } }

    /// Notes that this process now holds design document `id` at `revision`.
    func holds(_ id: String, revision: String) { state.withLock { $0.designs[id] = revision } }

    /// Sends `commands` and reads their answers, in order; each answer must come within
    /// `timeout` of the one before (or of the start), as CouchDB's `os_process_timeout` bounds
    /// each command. `["log", message]` lines go to `log`. Blocks its thread: run it off the
    /// cooperative pool. On a failure the answers so far are returned with it, and the process
    /// is stopped.
    func exchange(_ commands: [[UInt8]], timeout: Duration, maximumAnswer: Int, log: (String) -> Void) -> (answers: [JSON], failure: Failure?) {
        var outgoing: [UInt8] = []
        outgoing.reserveCapacity(commands.reduce(0) { $0 + $1.count + 1 })
        for command in commands {
            outgoing.append(contentsOf: command)
            outgoing.append(UInt8(ascii: "\n"))
        }
        var sent = 0
        var answers: [JSON] = []
        answers.reserveCapacity(commands.count)
        var pending = state.withLock { state in
            defer { state.pending = [] }
            return state.pending
        }
        var scanned = 0
        var deadline = ContinuousClock.now + timeout
        var block = [UInt8](repeating: 0, count: 1 << 16)
        func fail(_ failure: Failure) -> (answers: [JSON], failure: Failure?) {
            stop()
            return (answers, failure)
        }
        while answers.count < commands.count {
            // Whole lines first: an answer, or something the command's functions logged.
            var start = 0
            while answers.count < commands.count, let newline = pending[(start + scanned)...].firstIndex(of: UInt8(ascii: "\n")) {
                let value = (try? JSON(parsing: pending[start..<newline])) ?? .null
                start = newline + 1
                scanned = 0
                if case .array(let parts) = value, parts.count == 2, parts[0] == "log", let message = parts[1].stringValue {
                    log(message)
                    continue
                }
                answers.append(value)
                deadline = ContinuousClock.now + timeout
            }
            pending.removeFirst(start)
            if answers.count == commands.count { break }
            scanned = pending.count
            if pending.count > maximumAnswer { return fail(.answerTooLarge) }
            let left = deadline - ContinuousClock.now
            if left <= .zero { return fail(.timedOut) }
            var descriptors = [pollfd(fd: output, events: Int16(POLLIN), revents: 0)]
            if sent < outgoing.count { descriptors.append(pollfd(fd: input, events: Int16(POLLOUT), revents: 0)) }
            let milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
            let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                return fail(.exited("poll: \(String(cString: strerror(errno)))"))
            }
            if descriptors.count > 1, descriptors[1].revents != 0 {
                if descriptors[1].revents & Int16(POLLOUT) != 0 {
                    let written = outgoing.withUnsafeBytes { write(input, $0.baseAddress! + sent, $0.count - sent) }
                    if written > 0 { sent += written } else if written < 0, errno != EAGAIN, errno != EINTR { return fail(.exited(ended())) }
                } else {
                    return fail(.exited(ended()))
                }
            }
            if descriptors[0].revents != 0 {
                let count = block.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
                if count > 0 {
                    pending.append(contentsOf: block[..<count])
                } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                    return fail(.exited(ended()))
                }
            }
        }
        state.withLock { $0.pending = pending }
        return (answers, nil)
    }

    /// Kills the process (if it still runs) and waits for it; the pipes close.
    func stop() {
        let first = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        close(input)
        close(output)
    }

    /// How the process ended, once its output closed: waits for it.
    private func ended() -> String {
        var status: Int32 = 0
        var waited: pid_t
        repeat { waited = waitpid(pid, &status, 0) } while waited < 0 && errno == EINTR
        state.withLock { $0.stopped = true }
        close(input)
        close(output)
        guard waited == pid else { return "the query server process is gone" }
        let signal = status & 0x7f
        if signal != 0 { return "the query server process was killed by signal \(signal)" }
        return "the query server process exited with status \((status >> 8) & 0xff)"
    }
}

/// Why the query servers could not run a function at all.
public enum QueryServerError: Error, Sendable, CustomStringConvertible {
    /// The process could not be started.
    case cannotStart(String)

    public var description: String {
        switch self {
        case .cannotStart(let reason): "cannot start a query server: \(reason)"
        }
    }
}

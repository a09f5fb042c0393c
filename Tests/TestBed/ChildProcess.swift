import Foundation
import Synchronization

/// A process started by the test bed, with its standard output kept line by line
/// and its standard error kept as text, so tests can wait for what it prints.
public final class ChildProcess: Sendable {
    /// The process id.
    public let pid: pid_t
    /// The command line, for messages.
    public let commandLine: String
    private let output = Mutex<[String]>([])
    private let errors = Mutex<String>("")
    private let closedStreams = Atomic<Int>(0)
    /// The wait status once reaped; this object is the only one that waits for the child.
    private let exit = Mutex<Int32?>(nil)

    /// Starts `arguments[0]` (an absolute path) with the rest as arguments, standard input
    /// from /dev/null, and `environment` added to this process's environment.
    public init(_ arguments: [String], environment: [String: String] = [:]) throws {
        commandLine = arguments.joined(separator: " ")
        var stdoutPipe: [Int32] = [0, 0]
        var stderrPipe: [Int32] = [0, 0]
        guard pipe(&stdoutPipe) == 0, pipe(&stderrPipe) == 0 else {
            throw TestBedError.commandFailed(commandLine, status: -1, output: "pipe: \(String(cString: strerror(errno)))")
        }
        // Close-on-exec, so no other child inherits them (dup2 clears it on the child's 1 and 2).
        for descriptor in stdoutPipe + stderrPipe { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Children start with default signal handling and an empty mask, whatever this process set.
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        close(stdoutPipe[1])
        close(stderrPipe[1])
        guard result == 0 else {
            close(stdoutPipe[0])
            close(stderrPipe[0])
            throw TestBedError.commandFailed(commandLine, status: -1, output: "spawn: \(String(cString: strerror(result)))")
        }
        self.pid = pid
        readLines(stdoutPipe[0]) { [self] line in output.withLock { $0.append(line) } }
        readLines(stderrPipe[0]) { [self] line in errors.withLock { $0 += line + "\n" } }
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            _ = reap(blocking: true)
        }
    }

    /// Whether the process has not exited yet.
    public var isRunning: Bool { exitStatus == nil }

    /// Everything printed on standard output so far, one element per line.
    public var lines: [String] { output.withLock { $0 } }

    /// Everything printed on standard error so far.
    public var errorText: String { errors.withLock { $0 } }

    /// The exit status (128 + signal number when killed by a signal), once exited.
    public var exitStatus: Int32? { reap(blocking: false) }

    private func reap(blocking: Bool) -> Int32? {
        exit.withLock { exit in
            if let exit { return exit }
            var status: Int32 = 0
            let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
            guard result == pid else { return nil }
            let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            exit = code
            return code
        }
    }

    /// Waits until a line at index `from` or later satisfies `predicate`; returns its index and text.
    @discardableResult
    public func waitForLine(
        from: Int = 0, timeout: Duration, where predicate: (String) -> Bool
    ) async throws -> (index: Int, line: String) {
        let deadline = ContinuousClock.now + timeout
        while true {
            let current = lines
            if from < current.count, let index = current[from...].firstIndex(where: predicate) {
                return (index, current[index])
            }
            guard ContinuousClock.now < deadline else {
                throw TestBedError.timedOut("no matching line from '\(commandLine)' within \(timeout); stdout:\n\(current.joined(separator: "\n"))\nstderr:\n\(errorText)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Sends `signal` to the process.
    public func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits up to `timeout` for the process to exit; returns its status, or nil if it still runs.
    @discardableResult
    public func waitForExit(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while isRunning && ContinuousClock.now < deadline { usleep(2_000) }
        return exitStatus
    }

    /// Asks the process to stop (SIGTERM), then kills it (SIGKILL) after `grace`; waits for it.
    public func stop(grace: Duration = .seconds(3)) {
        guard isRunning else { return }
        signal(SIGTERM)
        if waitForExit(timeout: grace) == nil {
            kill(pid, SIGKILL)
            _ = reap(blocking: true)
        }
    }

    /// Waits up to `timeout` until standard output and error reached end of file.
    public func waitForOutputEnd(timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        while closedStreams.load(ordering: .acquiring) < 2 && ContinuousClock.now < deadline { usleep(2_000) }
    }

    private func readLines(_ descriptor: Int32, _ consume: @escaping @Sendable (String) -> Void) {
        Thread.detachNewThread { [self] in
            defer {
                close(descriptor)
                closedStreams.add(1, ordering: .releasing)
            }
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                pending += buffer[0..<count]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    consume(String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
            }
            if !pending.isEmpty { consume(String(decoding: pending, as: UTF8.self)) }
        }
    }
}

/// What went wrong in the test bed.
public enum TestBedError: Error, CustomStringConvertible {
    /// A command exited with a failure status.
    case commandFailed(String, status: Int32, output: String)
    /// Something did not happen in time.
    case timedOut(String)
    /// The test bed cannot run here (not root, a tool missing).
    case unsupported(String)

    /// A one-line explanation (plus captured output).
    public var description: String {
        switch self {
        case .commandFailed(let command, let status, let output): "'\(command)' exited with \(status): \(output)"
        case .timedOut(let what): "timed out: \(what)"
        case .unsupported(let why): "test bed unsupported: \(why)"
        }
    }
}

/// The result of a command run to completion.
public struct CommandResult: Sendable {
    /// The exit status.
    public var status: Int32
    /// Standard output.
    public var output: String
    /// Standard error.
    public var errorOutput: String
}

/// Runs a command to completion (at most `timeout`) and returns its status and output.
/// With `check`, a non-zero exit throws.
@discardableResult
public func runCommand(
    _ arguments: [String], environment: [String: String] = [:], check: Bool = true, timeout: Duration = .seconds(30)
) throws -> CommandResult {
    let child = try ChildProcess(arguments, environment: environment)
    guard let status = child.waitForExit(timeout: timeout) else {
        child.stop(grace: .milliseconds(200))
        throw TestBedError.timedOut("'\(child.commandLine)' did not finish within \(timeout)")
    }
    child.waitForOutputEnd(timeout: .seconds(2))
    let result = CommandResult(status: status, output: child.lines.joined(separator: "\n"), errorOutput: child.errorText)
    if check && status != 0 {
        throw TestBedError.commandFailed(child.commandLine, status: status, output: result.errorOutput + result.output)
    }
    return result
}

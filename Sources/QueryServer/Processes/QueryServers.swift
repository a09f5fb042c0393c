import Dispatch
import Glibc
import JSON
import Locking
import Logging

/// The query server processes design documents' JavaScript runs in, as CouchDB runs `couchjs`:
/// each in an OS process of its own, so a function that crashes the engine, or never returns,
/// takes down nothing but its process. Processes start when first needed and are kept for the
/// next command; at most ``maximumProcesses`` run at once, and a caller beyond waits its turn.
public final class QueryServers: Sendable {
    /// The program started for each process, and its arguments.
    public let executable: String
    public let arguments: [String]
    /// How many processes may run at once (CouchDB's `os_process_limit`).
    public let maximumProcesses: Int
    /// How long one command may take before its process is killed (CouchDB's
    /// `os_process_timeout`, 5 s).
    public let timeout: Duration
    /// The largest answer one command may give.
    public let maximumAnswer: Int
    private let logger: Logger
    private let state = Locked(State())

    private struct State {
        var idle: [QueryProcess] = []
        var running = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    /// Query servers started as `executable arguments...`.
    public init(executable: String, arguments: [String] = ["query-server"], maximumProcesses: Int = 4,
                timeout: Duration = .seconds(5), maximumAnswer: Int = 64 << 20,
                logger: Logger = Logger(label: "syncd.query-server")) {
        self.executable = executable
        self.arguments = arguments
        self.maximumProcesses = max(1, maximumProcesses)
        self.timeout = timeout
        self.maximumAnswer = maximumAnswer
        self.logger = logger
    }

    deinit {
        for process in state.withLock(\.idle) { process.stop() }
    }

    /// The `syncd` that serves as query server: this program when it is `syncd`, else the
    /// `syncd` beside it (a test bundle's, a benchmark's, in the same build folder).
    public static var syncdExecutable: String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let program = length > 0 ? String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
        let folder = program.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return program.hasSuffix("/syncd") ? program : folder + "/syncd"
    }

    /// What one command came to.
    public enum Outcome: Sendable, Equatable {
        /// The command's answer.
        case answer(JSON)
        /// No answer: the process took too long, ended, or could not start.
        case failed(CommandFailure)
    }

    /// CouchDB's `error` and `reason` for a command that got no answer.
    public struct CommandFailure: Sendable, Equatable {
        public let error: String
        public let reason: String

        /// CouchDB's `error` and `reason`.
        public init(error: String, reason: String) {
            self.error = error
            self.reason = reason
        }
    }

    /// Runs `commands` on one process, after the design documents they name are sent to it
    /// (`["ddoc", "new", id, doc]`, only when that process does not hold that revision) and
    /// then `setup` (`reset`, `add_lib`, `add_fun`: the state `map_doc` runs in), whose answers
    /// are the first of those returned. A command whose process is killed or ends fails alone:
    /// the rest go on in a new process, given the same design documents and setup.
    /// With `stoppingAtFailure`, the first command that fails fails the rest with it (a view's
    /// update, which cannot go past a document it could not map).
    public func run(_ commands: [[UInt8]], setup: [[UInt8]] = [], designs: [(id: String, revision: String, document: JSON)] = [],
                    stoppingAtFailure: Bool = false) async -> [Outcome] {
        var setupOutcomes: [Outcome]?
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(commands.count)
        // The command a process ended during, tried once more: a process killed by another
        // hand is no fault of the command's; one the command ends twice is.
        var retried: Int?
        while setupOutcomes == nil || outcomes.count < commands.count {
            let process: QueryProcess
            do {
                process = try await checkOut()
            } catch {
                let failure = CommandFailure(error: "os_process_error", reason: "\(error)")
                return outcomes + Array(repeating: .failed(failure), count: commands.count - outcomes.count)
            }
            let (answered, failure) = await exchange(setup + commands[outcomes.count...], designs: designs, on: process)
            checkIn(process)
            if answered.count < setup.count {
                // A process killed by another hand during the setup: once more, in a new one.
                if case .exited? = failure, retried != -1 {
                    retried = -1
                    continue
                }
                let reason = failure.map { "\($0)" } ?? "no answer"
                return Array(repeating: .failed(CommandFailure(error: "os_process_error", reason: reason)), count: setup.count + commands.count)
            }
            if setupOutcomes == nil { setupOutcomes = answered.prefix(setup.count).map(Outcome.answer) }
            let answers = answered.dropFirst(setup.count)
            outcomes.append(contentsOf: answers.map(Outcome.answer))
            switch failure {
            case nil:
                break
            case .timedOut?:
                logger.warning("a query server command took longer than \(timeout): its process was killed")
                outcomes.append(.failed(CommandFailure(error: "os_process_error", reason: "OS process timed out.")))
            case .answerTooLarge?:
                logger.warning("a query server answered more than \(maximumAnswer) bytes: its process was killed")
                outcomes.append(.failed(CommandFailure(error: "os_process_error", reason: "The answer is too large.")))
            case .exited(let how)?:
                logger.warning("a query server process ended mid-command", metadata: ["how": "\(how)"])
                if retried == outcomes.count {
                    outcomes.append(.failed(CommandFailure(error: "os_process_error", reason: how)))
                } else {
                    retried = outcomes.count
                }
            }
            if stoppingAtFailure, case .failed? = outcomes.last, outcomes.count < commands.count {
                outcomes += Array(repeating: outcomes.last!, count: commands.count - outcomes.count)
            }
        }
        return (setupOutcomes ?? []) + outcomes
    }

    /// Runs `commands` as ``run(_:setup:designs:)`` does, a large batch spread over as many
    /// processes as there are cores (within ``maximumProcesses``), in parts of at least
    /// `minimumPart`: what a `_bulk_docs` of a thousand validated documents waits for.
    /// Each part's process is given `setup` first; the answers returned are the first part's to
    /// `setup`, then every command's in order, as ``run(_:setup:designs:)`` returns them.
    public func runSpread(_ commands: [[UInt8]], setup: [[UInt8]] = [], designs: [(id: String, revision: String, document: JSON)] = [],
                          minimumPart: Int = 64, stoppingAtFailure: Bool = false) async -> [Outcome] {
        let parts = min(maximumProcesses, Self.cores, max(1, commands.count / minimumPart))
        guard parts > 1 else { return await run(commands, setup: setup, designs: designs, stoppingAtFailure: stoppingAtFailure) }
        let size = (commands.count + parts - 1) / parts
        return await withTaskGroup(of: (Int, [Outcome]).self) { group in
            for start in stride(from: 0, to: commands.count, by: size) {
                let part = Array(commands[start..<min(start + size, commands.count)])
                group.addTask { (start, await self.run(part, setup: setup, designs: designs, stoppingAtFailure: stoppingAtFailure)) }
            }
            var results: [(Int, [Outcome])] = []
            for await result in group { results.append(result) }
            results.sort { $0.0 < $1.0 }
            return results.enumerated().flatMap { place, result in place == 0 ? result.1 : Array(result.1.dropFirst(setup.count)) }
        }
    }

    /// The processors this process may run on.
    private static let cores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))

    /// Sends the design documents the process lacks, then the commands, on a thread of its own.
    private func exchange(_ commands: [[UInt8]], designs: [(id: String, revision: String, document: JSON)], on process: QueryProcess) async -> ([JSON], QueryProcess.Failure?) {
        let timeout = timeout, maximumAnswer = maximumAnswer, logger = logger
        let missing = designs.filter { process.designRevision($0.id) != $0.revision }
        let loads: [[UInt8]] = missing.map { JSON.array(["ddoc", "new", .string($0.id), $0.document]).serializedBytes() }
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let log: (String) -> Void = { logger.info("design document log: \($0)") }
                let (answers, failure) = process.exchange(loads + commands, timeout: timeout, maximumAnswer: maximumAnswer, log: log)
                if answers.count >= loads.count {
                    for design in missing { process.holds(design.id, revision: design.revision) }
                    continuation.resume(returning: (Array(answers.dropFirst(loads.count)), failure))
                } else {
                    continuation.resume(returning: ([], failure))
                }
            }
        }
    }

    private func checkOut() async throws(QueryServerError) -> QueryProcess {
        while true {
            enum Turn { case process(QueryProcess), start, wait }
            let turn: Turn = state.withLock { state in
                while let process = state.idle.popLast() {
                    if !process.isStopped { return .process(process) }
                    state.running -= 1
                }
                if state.running < maximumProcesses {
                    state.running += 1
                    return .start
                }
                return .wait
            }
            switch turn {
            case .process(let process):
                return process
            case .start:
                do {
                    return try QueryProcess(executable: executable, arguments: arguments)
                } catch {
                    release()
                    throw error
                }
            case .wait:
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLock { state in
                        if !state.idle.isEmpty || state.running < maximumProcesses { return true }
                        state.waiting.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    /// Returns a process for the next caller; a stopped one gives up its place.
    private func checkIn(_ process: QueryProcess) {
        let waiter = state.withLock { state in
            if process.isStopped { state.running -= 1 } else { state.idle.append(process) }
            return state.waiting.isEmpty ? nil : state.waiting.removeFirst()
        }
        waiter?.resume()
    }

    private func release() {
        let waiter = state.withLock { state in
            state.running -= 1
            return state.waiting.isEmpty ? nil : state.waiting.removeFirst()
        }
        waiter?.resume()
    }

    /// Stops every idle process (the agent stopping); busy ones stop as their exchanges end.
    public func shutdown() {
        let idle = state.withLock { state in
            defer { state.running -= state.idle.count; state.idle = [] }
            return state.idle
        }
        for process in idle { process.stop() }
    }
}

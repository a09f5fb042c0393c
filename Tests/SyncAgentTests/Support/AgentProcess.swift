import AsyncHTTPClient
import Foundation
import JSON
import Store
import SyncAgent
import TestBed

/// A `syncd agent` child process (on this host or inside a test-bed host),
/// with its data directory, and the CouchDB API of its control socket.
final class AgentProcess: Sendable {
    /// The data directory (holding `syncd.toml` and `control.sock`).
    let directory: String
    /// Where the agent is run: `nil` on this host.
    let host: TestHost?
    /// The running process.
    let process: ChildProcess
    /// The listener URLs it printed.
    let urls: [String]

    private init(directory: String, host: TestHost?, process: ChildProcess, urls: [String]) {
        self.directory = directory
        self.host = host
        self.process = process
        self.urls = urls
    }

    /// Writes `configuration` (TOML) to `DIRECTORY/syncd.toml`, starts the agent (with
    /// `environment` added to the test's, through `launcher` when given, such as
    /// `unshare --net …`) and waits for its URLs. It prints its invitation into the test's pipe
    /// unless `showsInvitation` is false (as for any output but a terminal).
    static func start(in directory: String, configuration: String? = nil, on host: TestHost? = nil,
                      arguments: [String] = [], environment: [String: String] = [:],
                      launcher: [String] = [], showsInvitation: Bool = true) async throws -> AgentProcess {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if let configuration { try configuration.write(toFile: directory + "/syncd.toml", atomically: true, encoding: .utf8) }
        // The tests pair from the invitation the agent prints, into a pipe.
        let command = [try TestBed.syncdExecutable, "agent", "--data", directory, "--log-level", "info"]
            + (showsInvitation ? ["--show-invitation"] : []) + arguments
        let process = try host?.spawn(command, environment: environment) ?? ChildProcess(launcher + command, environment: environment)
        do {
            try await process.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("listening on ") }
            // The listener's lines come together; the one after them says the agent has started.
            try await process.waitForLine(timeout: .seconds(10)) { $0.contains("paired peer") || $0.hasPrefix("No peers yet") }
        } catch {
            process.stop()
            throw error
        }
        let urls = process.lines.filter { $0.hasPrefix("listening on ") }.map { String($0.dropFirst("listening on ".count)) }
        return AgentProcess(directory: directory, host: host, process: process, urls: urls)
    }

    /// The invitation URL the agent printed, when it had no peers.
    var invitation: String? {
        process.lines.first { $0.hasPrefix("https://") && $0.contains("/#") }
    }

    /// The control socket.
    var controlSocket: String { directory + "/control.sock" }

    /// `http+unix://…`: the agent's CouchDB API, as the data directory's owner.
    var baseURL: String { ControlClient(socketPath: controlSocket).baseURL }

    /// The listener's port.
    var port: Int { urls.first.flatMap { $0.split(separator: ":").last }.flatMap { Int($0) } ?? 0 }

    /// Starts an agent with the default configuration on each host of `bed`, each in `directory`/HOST.
    static func start(on bed: TestBed, in directory: String) async throws -> [AgentProcess] {
        var agents: [AgentProcess] = []
        for host in bed.hosts { agents.append(try await start(in: directory + "/" + host.name, on: host)) }
        return agents
    }

    /// Runs `syncd ARGUMENTS --data DIRECTORY` beside the agent (inside its test-bed host, if any).
    func syncd(_ arguments: [String]) throws -> CommandResult {
        let command = [try TestBed.syncdExecutable] + arguments + ["--data", directory]
        if let host { return try host.run(command, check: false, timeout: .seconds(60)) }
        return try runCommand(command, check: false, timeout: .seconds(60))
    }

    /// Joins the invitation `url` (`syncd pair URL`).
    func pair(with url: String) throws {
        let result = try syncd(["pair", url])
        guard result.status == 0 else { throw TestSupportError("pairing failed: \(result.output)\(result.errorOutput)") }
    }

    // MARK: Documents, through the control socket

    /// `PUT /db/id`; returns the new revision.
    @discardableResult
    func put(_ database: String, _ id: String, _ body: JSON) async throws -> String {
        let (status, answer) = try await HTTP.json(.PUT, "\(baseURL)/\(database)/\(id)", body)
        guard status == 201 || status == 202, let revision = answer["rev"]?.stringValue else {
            throw TestSupportError("PUT \(database)/\(id): \(status) \(answer.serialized())")
        }
        return revision
    }

    /// `POST /db/_bulk_docs` of `documents`.
    func bulk(_ database: String, _ documents: [JSON]) async throws {
        let (status, answer) = try await HTTP.json(.POST, "\(baseURL)/\(database)/_bulk_docs", ["docs": .array(documents)])
        guard status == 201 else { throw TestSupportError("_bulk_docs: \(status) \(answer.serialized())") }
    }

    /// `GET /db/id` (with `query`), or nil on 404.
    func get(_ database: String, _ id: String, query: String = "") async throws -> JSON? {
        let (status, answer) = try await HTTP.json(.GET, "\(baseURL)/\(database)/\(id)\(query)")
        return status == 200 ? answer : nil
    }

    /// `GET /db`: the database's info.
    func info(_ database: String) async throws -> JSON {
        try await HTTP.json(.GET, "\(baseURL)/\(database)").json
    }

    /// The ids of the database's documents.
    func ids(_ database: String) async throws -> Set<String> {
        let answer = try await HTTP.json(.GET, "\(baseURL)/\(database)/_all_docs").json
        return Set((answer["rows"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue })
    }

    /// The agent's status.
    func status() async throws -> AgentStatus {
        try await ControlClient(socketPath: controlSocket).status()
    }

    /// ``waitUntil(_:timeout:file:line:_:)`` with the agent's last output in the failure.
    func waitUntil(_ what: String, timeout: Duration = .seconds(60), file: StaticString = #filePath, line: UInt = #line,
                   _ condition: () async throws -> Bool) async throws {
        try await SyncAgentTests.waitUntil(
            "\(what); agent output:\n\(process.lines.suffix(30).joined(separator: "\n"))\n\(process.errorText.suffix(3000))",
            timeout: timeout, file: file, line: line, condition)
    }

    /// Stops the agent with SIGTERM and returns its exit status.
    @discardableResult
    func stop() -> Int32? {
        process.stop(grace: .seconds(15))
        return process.exitStatus
    }
}

extension AgentProcess {
    /// Waits until `agents` are quiet: every replication between them is idle and has
    /// checkpointed its source's current sequence, so each has read all there is and
    /// none has anything left to write. Until something new is written, nothing moves.
    /// A `filtered` replication checkpoints the last change it was sent, which may be
    /// older than its source's sequence: it is quiet when idle with no change pending.
    static func waitUntilQuiet(_ agents: [AgentProcess], filtered: Bool = false, timeout: Duration = .seconds(60)) async throws {
        try await agents[0].waitUntil("the agents fall quiet", timeout: timeout) {
            var statuses: [AgentStatus] = []
            for agent in agents { statuses.append(try await agent.status()) }
            let byUUID = Dictionary(statuses.map { ($0.node.uuid.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
            var between = 0  // replications whose source is one of `agents`: none would make this vacuous
            for status in statuses {
                for replication in status.replications {
                    guard replication.state == "idle" else { return false }
                    guard let peer = status.peers.first(where: { $0.name == replication.with }),
                          let source = byUUID[peer.uuid.lowercased()] else { continue }  // not one of `agents`
                    let sequence = source.databases.first { $0.name == replication.database }?.updateSeq
                    guard replication.checkpointedSeq == sequence || (filtered && replication.changesPending == 0) else { return false }
                    between += 1
                }
            }
            return between > 0
        }
    }
}

import ArgumentParser
import Foundation
import SyncAgent

/// Shows what the running agent is doing.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the running agent's node, discovery, peers, replications and databases.",
        discussion: """
            Asks the agent through its control socket. Exit status: 0 when all is well, 1 when something \
            needs attention (listed under "Problems": a peer offline, a replication failed, discovery \
            unavailable, a disk nearly full), 2 when PEER names no paired peer, 3 when no agent is \
            running, 4 when the socket cannot be opened (not in the syncd group) or the answer cannot \
            be read.
            """
    )

    @OptionGroup var data: DataOptions
    @OptionGroup var control: ControlOptions

    @Argument(help: "Show only this peer (its ID, a prefix of it, or its name), in detail.")
    var peer: String?

    @Flag(help: "Print the status as JSON (the format is documented in the README).")
    var json = false

    @Flag(help: "Redraw every second until Ctrl-C.")
    var watch = false

    func run() async throws {
        let client = ControlClient(socketPath: control.path(data: data))
        if watch {
            signal(SIGINT, SIG_DFL)
            while true {
                let text: String
                do { text = try render(try await client.status()).text } catch { text = "\(error)\n" }
                FileHandle.standardOutput.write(Data(("\u{1B}[H\u{1B}[2J" + text).utf8))
                try await Task.sleep(for: .seconds(1))
            }
        }
        let status: AgentStatus
        do {
            status = try await client.status()
        } catch let failure as ControlClient.Failure {
            FileHandle.standardError.write(Data("\(failure)\n".utf8))
            if case .noAgent = failure { throw ExitCode(3) }
            throw ExitCode(4)
        }
        let text: String, healthy: Bool
        do {
            (text, healthy) = try render(status)
        } catch let unknown as UnknownPeer {
            FileHandle.standardError.write(Data("\(unknown)\n".utf8))
            throw ExitCode(2)
        }
        FileHandle.standardOutput.write(Data(text.utf8))
        if !healthy { throw ExitCode(1) }
    }

    /// The status as text (or JSON), and whether nothing needs attention.
    private func render(_ status: AgentStatus) throws -> (text: String, healthy: Bool) {
        var status = status
        if let peer {
            status.peers = status.peers.filter { $0.name == peer || $0.uuid == peer || $0.id.replacingOccurrences(of: "-", with: "").hasPrefix(peer.uppercased().replacingOccurrences(of: "-", with: "")) }
            guard !status.peers.isEmpty else { throw UnknownPeer(name: peer) }
            let names = Set(status.peers.map(\.name))
            status.replications = status.replications.filter { names.contains($0.with) }
        }
        if json {
            return (String(decoding: try AgentStatus.encoder.encode(status), as: UTF8.self) + "\n", status.problems.isEmpty)
        }
        return (StatusText(status, detailed: peer != nil).text, status.problems.isEmpty)
    }
}

/// A `PEER` argument that names no paired peer.
private struct UnknownPeer: Error, CustomStringConvertible {
    let name: String
    var description: String { "no paired peer matches \(name) (see syncd peers)" }
}

/// The status laid out for a terminal of 80 columns.
struct StatusText {
    let status: AgentStatus
    let detailed: Bool
    private let now = Date()

    init(_ status: AgentStatus, detailed: Bool) {
        self.status = status
        self.detailed = detailed
    }

    var text: String {
        var lines: [String] = []
        let node = status.node
        lines.append("● syncd \(node.version) on \(node.name), up \(Self.age(node.started, now))")
        lines.append("  ID    \(node.id)")
        lines.append("  UUID  \(node.uuid)")
        for url in node.urls { lines.append("  URL   \(url)") }
        lines.append("  Data  \(node.dataDirectory)")
        lines.append("")
        lines.append("Discovery: \(status.discovery.state)" + (status.discovery.reason.map { " (\($0))" } ?? ""))
        lines.append("")
        lines.append("Peers (\(status.peers.count)):")
        if status.peers.isEmpty { lines.append("  none yet: run `syncd pair` here, or join another node's invitation") }
        for peer in status.peers {
            let short = String(peer.id.prefix(9))
            let seen = peer.lastSeen.map { "seen \(Self.age($0, now)) ago" } ?? "never seen"
            lines.append("  \(Self.pad(peer.name, 16)) \(short)  \(Self.pad(peer.state, 10)) \(Self.pad(peer.address ?? "", 22)) \(seen)")
            if let reason = peer.reason { lines.append("    \(reason)") }
            if detailed {
                lines.append("    ID \(peer.id)")
                lines.append("    UUID \(peer.uuid), paired \(ISO8601DateFormatter().string(from: peer.pairedAt))")
                lines.append("    shares \(peer.databases.joined(separator: ", "))")
            }
        }
        lines.append("")
        lines.append("Replications (\(status.replications.count)):")
        for replication in status.replications {
            var line = "  \(Self.pad(replication.database, 12)) \(replication.direction == "pull" ? "<-" : "->") "
            line += "\(Self.pad(replication.with, 16)) \(Self.pad(replication.state, 8)) "
            line += "read \(replication.docsRead) written \(replication.docsWritten)"
            if replication.docWriteFailures > 0 { line += " failed \(replication.docWriteFailures)" }
            if let pending = replication.changesPending, pending > 0 { line += " pending \(pending)" }
            lines.append(line)
            if let error = replication.lastError { lines.append("    last error: \(error)") }
        }
        if !detailed {
            lines.append("")
            lines.append("Databases (\(status.databases.count)):")
            for database in status.databases {
                lines.append("  \(Self.pad(database.name, 16)) \(database.docCount) docs, \(database.docDelCount) deleted, seq \(database.updateSeq), \(Self.bytes(database.sizeOnDisk))")
            }
        }
        let problems = status.problems
        if !problems.isEmpty {
            lines.append("")
            lines.append("Problems (\(problems.count)):")
            for problem in problems { lines.append("  ! \(problem)") }
        }
        return lines.flatMap(Self.fit).joined(separator: "\n") + "\n"
    }

    /// `line` broken at spaces into lines of at most 80 columns, each continuation
    /// indented 4 more than the line; a word longer than that is cut.
    static func fit(_ line: String) -> [String] {
        let width = 80
        guard line.count > width else { return [line] }
        let lead = String(line.prefix { $0 == " " })
        let indent = lead + "    "
        var lines: [String] = []
        var current = lead
        var empty = true
        for word in line.dropFirst(lead.count).split(separator: " ", omittingEmptySubsequences: false) {
            let longer = empty ? current + word : current + " " + word
            if longer.count <= width || empty {
                current = longer
            } else {
                lines.append(current)
                current = indent + word
            }
            empty = false
            while current.count > width {
                lines.append(String(current.prefix(width)))
                current = indent + current.dropFirst(width)
            }
        }
        lines.append(current)
        return lines
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
    }

    static func age(_ date: Date, _ now: Date) -> String {
        let seconds = max(0, Int(now.timeIntervalSince(date)))
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m" }
        if seconds < 86400 { return "\(seconds / 3600)h \(seconds % 3600 / 60)m" }
        return "\(seconds / 86400)d \(seconds % 86400 / 3600)h"
    }

    static func bytes(_ count: Int) -> String {
        if count < 1 << 20 { return "\(count >> 10) KiB" }
        if count < 1 << 30 { return "\(count >> 20) MiB" }
        return String(format: "%.1f GiB", Double(count) / Double(1 << 30))
    }
}

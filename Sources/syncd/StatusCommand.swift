import ArgumentParser
import FoundationEssentials
import JSON
#if canImport(Glibc)
import Glibc
#endif
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
                StandardStream.output.write("\u{1B}[H\u{1B}[2J" + text)
                try await Task.sleep(for: .seconds(1))
            }
        }
        let status: AgentStatus
        do {
            status = try await client.status()
        } catch let failure as ControlClient.Failure {
            report(error: failure.error, reason: failure.description)
            if case .noAgent = failure { throw ExitCode(3) }
            throw ExitCode(4)
        }
        let text: String, healthy: Bool
        do {
            (text, healthy) = try render(status)
        } catch let unknown as UnknownPeer {
            report(error: "unknown_peer", reason: unknown.description)
            throw ExitCode(2)
        }
        StandardStream.output.write(text)
        if !healthy { throw ExitCode(1) }
    }

    /// A failure on standard error, or with `--json` as `{"error","reason"}` on standard output,
    /// so that a program reading the JSON gets JSON whatever happens.
    private func report(error: String, reason: String) {
        guard json else { return StandardStream.error.write("\(reason)\n") }
        let body: JSON = ["error": .string(error), "reason": .string(reason)]
        StandardStream.output.write(body.serialized(sortedKeys: true) + "\n")
    }

    /// The status as text (or JSON), and whether nothing needs attention.
    private func render(_ status: AgentStatus) throws -> (text: String, healthy: Bool) {
        var status = status
        if let peer {
            status.peers = status.peers.filter { $0.isNamed(by: peer) }
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

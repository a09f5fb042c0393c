import AsyncHTTPClient
import Foundation
import JSON
import NIOSSL
import Store
import SyncAgent
import TestBed
import XCTest

/// The commands that change a node's state (`user`, `peers`, `pair`, `info`) as a user
/// runs them: once with the data directory claimed by the command, once beside a
/// running agent (through its control socket). Both print the same; beside the agent,
/// each change takes effect in it at once (nothing is polled).
final class NodeCommandsTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUp() async throws { directory = try TemporaryDirectory(prefix: "node-commands") }
    override func tearDown() async throws { directory.remove() }

    func testEachCommandDoesTheSameWithAndWithoutARunningAgent() async throws {
        let claimed = try await transcript(agent: false)
        let beside = try await transcript(agent: true)
        XCTAssertEqual(claimed, beside)
        XCTAssertTrue(claimed.contains("$ user list\nalice (reader)\n"), claimed)
        XCTAssertTrue(claimed.contains("$ peers remove walker\nremoved walker (W-ID)\n"), claimed)
    }

    /// The commands run on node X (named xray), with W (walker) joining X's invitation;
    /// IDs replaced by `X-ID` and `W-ID`.
    private func transcript(agent: Bool) async throws -> String {
        let root = directory.path + (agent ? "/with-agent" : "/claimed")
        let (x, w) = (root + "/x", root + "/w")
        let running = agent ? try await AgentProcess.start(in: x, configuration: AgentTests.configuration(port: 0, "[node]\nname = \"xray\"")) : nil
        defer { _ = running?.stop() }
        var text = ""
        func run(_ arguments: [String], on data: String = x, input: String? = nil) throws -> (status: Int32, output: String, error: String) {
            let result = try SyncdCommand.run(arguments + ["--data", data], input: input)
            text += "$ " + arguments.joined(separator: " ") + "\n" + result.output + result.error + (result.status == 0 ? "" : "(exit \(result.status))\n")
            return result
        }
        _ = try run(["user", "add", "alice", "--role", "reader"], input: "first password\n")
        _ = try run(["user", "add", "alice"], input: "second password\n")
        _ = try run(["user", "list"])
        if let running {
            // The agent's listener takes the new password at once.
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = .none
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            let login = "Basic " + Data("alice:second password".utf8).base64EncodedString()
            let session = try await HTTP.json(.GET, running.urls[0] + "/_session", headers: [("Authorization", login)], client: client)
            try await client.shutdown()
            XCTAssertEqual(session.json["userCtx"]?["name"]?.stringValue, "alice", "\(session.status) \(session.json.serialized())")
        }
        _ = try run(["user", "remove", "alice"])
        _ = try run(["user", "remove", "alice"])

        // X invites (serving itself when no agent runs); W joins with the printed URL.
        let inviting = try SyncdRun(["pair", "--data", x, "--json", "--database", "notes", "--expires", "2m", "--address", "127.0.0.1"]
                                    + (agent ? [] : ["--name", "xray", "--host", "127.0.0.1", "--port", "0"]), in: root)
        let printed = await inviting.waitForOutput("\"url\"")
        XCTAssertTrue(printed, inviting.errors)
        let invitation = try JSON(parsing: Array(inviting.output.utf8))
        let url = try XCTUnwrap(invitation["url"]?.stringValue)
        let joined = try run(["pair", url, "--name", "walker"], on: w)
        XCTAssertEqual(joined.status, 0, joined.error)
        let invitingStatus = await inviting.finish()
        XCTAssertEqual(invitingStatus, 0, inviting.errors)
        text += "$ pair --json …\n" + inviting.output.split(separator: "\n").dropFirst().joined(separator: "\n") + "\n"
        if let running {
            let peers = try await running.status().peers
            XCTAssertEqual(peers.map(\.name), ["walker"], "the agent follows the pairing made through it")
        }
        _ = try run(["peers", "--json"])
        _ = try run(["peers", "remove", "nobody"])
        _ = try run(["peers", "remove", "walker"])
        if let running {
            let peers = try await running.status().peers
            XCTAssertEqual(peers.map(\.name), [], "the agent stops replicating with a revoked peer at once")
        }
        // Beside the agent, the invitation it printed at start is still open.
        XCTAssertEqual(try run(["pair", "--cancel"]).output, agent ? "cancelled 1 invitation\n" : "cancelled 0 invitations\n")
        _ = try run(["info", "--database", "things"])
        // A name with a slash is one database, reached as one path segment through the agent too.
        _ = try run(["info", "--database", "a/b"])
        if agent {
            let named = try SyncdCommand.run(["pair", "--data", x, "--name", "other"])
            XCTAssertEqual(named.status, 1)
            XCTAssertEqual(named.error, "error: --name is for a node no agent runs; the agent's name is [node] name in its syncd.toml\n")
        }
        let xID = try XCTUnwrap(invitation["id"]?.stringValue)
        let wID = try XCTUnwrap(try SyncdCommand.run(["id", "--data", w]).output.split(separator: "\n").first { $0.hasPrefix("ID") }?
            .split(separator: " ").last.map(String.init))
        return Self.normalized(text, [(xID, "X-ID"), (wID, "W-ID"), (x, "X"), (w, "W")])
    }

    /// `text` with what differs between two runs (IDs, dates, UUIDs, paths) replaced.
    private static func normalized(_ text: String, _ names: [(String, String)]) -> String {
        var text = text
        for (value, name) in names { text = text.replacingOccurrences(of: value, with: name) }
        for pattern in [#"\d{4}-\d\d-\d\dT[0-9:]+Z"#, #"#[A-Z0-9]+-[A-Z0-9]+"#, #"[0-9a-f]{32}"#, #"127\.0\.0\.1:\d+"#, #""handle" : "[0-9a-f]+""#,
                        #"uuid:\s+\S+"#, #"cancelled \d+ invitations?"#, #"size on disk:\s+\d+"#] {
            text = text.replacingOccurrences(of: pattern, with: "…", options: .regularExpression)
        }
        return text
    }
}

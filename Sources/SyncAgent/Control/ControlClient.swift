import AsyncHTTPClient
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import JSON
import NIOCore
import NIOFoundationEssentialsCompat
import NIOHTTP1

/// Talks to a running agent through its control socket: what `syncd status`
/// and the other commands use while an agent owns the data directory.
public struct ControlClient: Sendable {
    /// The socket's path.
    public let socketPath: String

    /// A client of the agent listening at `socketPath`.
    public init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// Why the agent could not be asked.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// No agent listens there.
        case noAgent(String)
        /// The socket exists but this user may not open it.
        case notPermitted(String)
        /// The agent answered something else than expected.
        case badAnswer(String)

        public var description: String {
            switch self {
            case .noAgent(let path):
                "no syncd agent is running (no control socket at \(path)): start one with `syncd agent`, or `systemctl start syncd` where the package is installed"
            case .notPermitted(let path): "not allowed to open the agent's control socket \(path) (are you in the syncd group?)"
            case .badAnswer(let why): "the agent's answer could not be read: \(why)"
            }
        }

        /// The failure as a CouchDB-style error code, for output read by programs (`syncd status --json`).
        public var error: String {
            switch self {
            case .noAgent: "no_agent"
            case .notPermitted: "not_permitted"
            case .badAnswer: "bad_answer"
            }
        }
    }

    /// Whether an agent seems to listen there (the socket exists).
    public var agentExists: Bool {
        FileStatus(path: socketPath)?.isSocket ?? false
    }

    /// The base URL of the agent's CouchDB API over the socket (`http+unix://…`).
    public var baseURL: String {
        "http+unix://" + PathEncoding.segment(socketPath)
    }

    /// The agent's status.
    public func status() async throws -> AgentStatus {
        let (status, body) = try await request(.GET, "/_syncd")
        guard status == 200 else { throw Failure.badAnswer("HTTP \(status)") }
        do {
            return try AgentStatus.decoder.decode(AgentStatus.self, from: Data(buffer: body))
        } catch {
            throw Failure.badAnswer("\(error)")
        }
    }

    /// Has the agent reread its configuration file; returns once it is applied. Throws
    /// ``NodeControlError/reported(_:_:_:)`` with the agent's reason when the file is invalid
    /// (the agent then keeps the configuration it had), ``Failure/badAnswer(_:)`` for any
    /// other answer (an agent started before `reload` existed answers 404).
    public func reload() async throws {
        // Replications whose settings changed are stopped (they checkpoint) before the answer.
        let (status, body) = try await request(.POST, "/_syncd/reload", timeout: .seconds(60))
        switch status {
        case 200:
            return
        case 400:
            _ = try Self.answer(status, body)  // throws the agent's reason
            throw Failure.badAnswer("HTTP 400")
        case 404:
            throw Failure.badAnswer("the agent does not know reload (HTTP 404): it predates this syncd; restart it, or send it SIGHUP")
        default:
            throw Failure.badAnswer("HTTP \(status)")
        }
    }

    /// The answer's JSON when it succeeded; the node's refusal, as it said it, when not.
    static func answer(_ status: Int, _ body: ByteBuffer) throws -> JSON {
        guard let json = try? JSON(parsing: body.readableBytesView) else { throw Failure.badAnswer("HTTP \(status), not JSON") }
        guard (200..<300).contains(status) else {
            throw NodeControlError.reported(status, json["error"]?.stringValue ?? "unknown_error", json["reason"]?.stringValue ?? "HTTP \(status)")
        }
        return json
    }

    /// Sends `method path` (with a JSON `body`, if given) to the agent's CouchDB API and
    /// returns the status and body; the agent has `timeout` to answer.
    public func request(_ method: HTTPMethod, _ path: String, body: [UInt8]? = nil,
                        timeout: Duration = .seconds(10)) async throws -> (status: Int, body: ByteBuffer) {
        // A directory this user may not search hides the socket: that is a permission failure too.
        guard let status = FileStatus(path: socketPath) else {
            throw errno == EACCES ? Failure.notPermitted(socketPath) : Failure.noAgent(socketPath)
        }
        guard status.isSocket else { throw Failure.noAgent(socketPath) }
        guard access(socketPath, R_OK | W_OK) == 0 else { throw Failure.notPermitted(socketPath) }
        do {
            var request = HTTPClientRequest(url: baseURL + path)
            request.method = method
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(bytes: body))
            }
            let response = try await HTTPClient.shared.execute(request, timeout: TimeAmount(timeout))
            return (Int(response.status.code), try await response.body.collect(upTo: 16 << 20))
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            throw Failure.badAnswer("no answer within \(timeout)")
        } catch {
            // A socket left by an agent that was killed: nobody accepts on it.
            throw Failure.noAgent(socketPath)
        }
    }
}

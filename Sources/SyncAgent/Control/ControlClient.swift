import AsyncHTTPClient
import Foundation
import NIOCore

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
            case .noAgent(let path): "no syncd agent is running (no control socket at \(path))"
            case .notPermitted(let path): "not allowed to open the agent's control socket \(path) (are you in the syncd group?)"
            case .badAnswer(let why): "the agent's answer could not be read: \(why)"
            }
        }
    }

    /// Whether an agent seems to listen there (the socket exists).
    public var agentExists: Bool {
        var info = stat()
        return stat(socketPath, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
    }

    /// The base URL of the agent's CouchDB API over the socket (`http+unix://…`).
    public var baseURL: String {
        "http+unix://" + socketPath.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    /// The agent's status.
    public func status() async throws -> AgentStatus {
        guard agentExists else { throw Failure.noAgent(socketPath) }
        guard access(socketPath, R_OK | W_OK) == 0 else { throw Failure.notPermitted(socketPath) }
        let body: ByteBuffer
        do {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: baseURL + "/_syncd"), timeout: .seconds(10))
            guard response.status == .ok else { throw Failure.badAnswer("HTTP \(response.status.code)") }
            body = try await response.body.collect(upTo: 16 << 20)
        } catch let failure as Failure {
            throw failure
        } catch {
            // A socket left by an agent that was killed: nobody accepts on it.
            throw Failure.noAgent(socketPath)
        }
        do {
            return try AgentStatus.decoder.decode(AgentStatus.self, from: Data(buffer: body))
        } catch {
            throw Failure.badAnswer("\(error)")
        }
    }
}

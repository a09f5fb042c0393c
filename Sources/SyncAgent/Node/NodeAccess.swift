import FoundationEssentials
import Logging

/// How a command reaches the node of a data directory: through the agent that
/// runs it (over its control socket), or, when no process holds the directory,
/// by claiming it for as long as the command runs. The one place that decides.
public enum NodeAccess: Sendable {
    /// An agent runs the node; it is asked over its control socket.
    case agent(AgentControl)
    /// This process claimed the directory.
    case claimed(Node)

    /// The node of `directory`: its agent's, when one holds the directory and listens on
    /// `controlSocket`; else the directory, claimed (with `name`, if given, recorded as the node's).
    /// Throws when another process holds the directory without a control socket.
    public static func open(directory: String, controlSocket: String, name: String? = nil,
                            logger: Logger = Logger(label: "syncd")) throws -> NodeAccess {
        let agent = ControlClient(socketPath: controlSocket)
        if !DataDirectoryLock.isHeld(directory) {
            do {
                return .claimed(try Node(directory: directory, name: name, logger: logger))
            } catch DataDirectoryError.inUse {
                // Claimed by another process since the look: ask it, if it is an agent.
            }
        }
        guard agent.agentExists else {
            let owner = DataDirectoryLock.owner(of: directory).map { " (pid \($0))" } ?? ""
            throw NodeAccessError("another syncd\(owner) holds \(directory) and has no control socket at \(controlSocket): stop it, or give its socket with --control-socket")
        }
        return .agent(AgentControl(client: agent))
    }

    /// What answers the commands.
    public var control: any NodeControl {
        switch self {
        case .agent(let agent): agent
        case .claimed(let node): node
        }
    }

    /// Closes a claimed node's databases (the claim ends with the process or the node).
    public func close() {
        if case .claimed(let node) = self { node.close() }
    }
}

/// A data directory that cannot be reached, said plainly.
public struct NodeAccessError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}

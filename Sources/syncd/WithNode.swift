import ArgumentParser
import FoundationEssentials
import SyncAgent

/// Runs `body` on the data directory's node: through the running agent, or with the
/// directory claimed when none runs (see ``NodeAccess``). A refusal is printed as
/// `error: …` and ends the command with status 1.
func withNode<Value>(_ data: DataOptions, _ control: ControlOptions, name: String? = nil,
                     _ body: (NodeAccess) async throws -> Value) async throws -> Value {
    let access: NodeAccess
    do {
        access = try NodeAccess.open(directory: data.path, controlSocket: control.path(data: data), name: name)
    } catch {
        throw failure(error)
    }
    defer { access.close() }
    do {
        return try await body(access)
    } catch {
        throw failure(error)
    }
}

/// What `read` finds on the data directory's node; `nothing` when no node was ever made
/// there (so a command that only reads creates nothing).
func readNode<Value>(_ data: DataOptions, _ control: ControlOptions, nothing: Value,
                     _ read: (any NodeControl) async throws -> Value) async throws -> Value {
    guard FileManager.default.fileExists(atPath: data.path) else { return nothing }
    return try await withNode(data, control) { try await read($0.control) }
}

/// `error`, printed as `error: …` when it is a refusal said in one line (then exit status 1),
/// else as it is for the argument parser to report.
func failure(_ error: any Error) -> any Error {
    switch error {
    case is NodeControlError, is NodeAccessError, is ControlClient.Failure, is DataDirectoryError, is PairingError:
        StandardStream.error.write("error: \(error)\n")
        return ExitCode(1)
    default:
        return error
    }
}

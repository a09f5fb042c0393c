import ArgumentParser
import FoundationEssentials
import SyncAgent

/// Has the running agent reread its configuration file, and waits until it is applied.
struct ReloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Have the running agent reread its configuration file (as SIGHUP does) and apply it.",
        discussion: """
            Returns once the agent has applied the file: databases it adds are open, replications \
            whose settings changed are restarted, the others keep running. An invalid file changes \
            nothing: the agent's reason is printed (it names the key). The unit's `systemctl reload \
            syncd` runs this command. Exit status: 0 when applied, 1 when the file is invalid, 3 when \
            no agent is running, 4 when the socket cannot be opened or the answer cannot be read.
            """
    )

    @OptionGroup var data: DataOptions
    @OptionGroup var control: ControlOptions

    func run() async throws {
        do {
            try await ControlClient(socketPath: control.path(data: data)).reload()
        } catch let refusal as NodeControlError {
            StandardStream.error.write("configuration not reloaded: \(refusal)\n")
            throw ExitCode(1)
        } catch let failure as ControlClient.Failure {
            StandardStream.error.write("\(failure)\n")
            if case .noAgent = failure { throw ExitCode(3) }
            throw ExitCode(4)
        }
        print("configuration reloaded")
    }
}

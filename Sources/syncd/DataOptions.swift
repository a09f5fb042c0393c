import ArgumentParser
import Foundation

/// Where syncd keeps its databases, node identity and settings.
struct DataOptions: ParsableArguments {
    @Option(name: .customLong("data"), help: "Data directory (default: $SYNCD_DATA, else ~/.local/share/syncd).")
    var directory: String?

    /// The data directory in force.
    var path: String {
        if let directory { return directory }
        if let environment = ProcessInfo.processInfo.environment["SYNCD_DATA"], !environment.isEmpty { return environment }
        let home = ProcessInfo.processInfo.environment["XDG_DATA_HOME"].map { $0 + "/syncd" }
        return home ?? (FileManager.default.homeDirectoryForCurrentUser.path + "/.local/share/syncd")
    }
}

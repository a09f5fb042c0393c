import ArgumentParser
import FoundationEssentials

/// Where syncd keeps its databases, node identity and settings.
struct DataOptions: ParsableArguments {
    @Option(name: .customLong("data"), help: "Data directory (default: $SYNCD_DATA, else $XDG_DATA_HOME/syncd, else ~/.local/share/syncd).")
    var directory: String?

    /// The data directory in force: `--data`, `$SYNCD_DATA`, `$XDG_DATA_HOME/syncd`, then
    /// `.local/share/syncd` in `$HOME` or, without it, the passwd entry's home, as XDG tools do.
    var path: String {
        if let directory { return directory }
        let environment = ProcessInfo.processInfo.environment.filter { !$0.value.isEmpty }
        if let data = environment["SYNCD_DATA"] { return data }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg + "/syncd" }
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        return home + "/.local/share/syncd"
    }
}

/// Where a running agent's control socket is.
struct ControlOptions: ParsableArguments {
    @Option(name: .customLong("control-socket"), help: "The agent's control socket (default: DATA/control.sock, else /run/syncd/control.sock).")
    var path: String?

    /// The socket in force for the data directory `data`: the option, `DATA/control.sock`, or the
    /// packaged service's `/run/syncd/control.sock` when the data directory has none.
    func path(data: DataOptions) -> String {
        if let path { return path }
        let own = data.path + "/control.sock"
        let service = "/run/syncd/control.sock"
        if data.directory == nil, !FileManager.default.fileExists(atPath: own), FileManager.default.fileExists(atPath: service) {
            return service
        }
        return own
    }
}


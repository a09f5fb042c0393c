import ArgumentParser
import SyncAgent

/// `--log-format`, for the commands that run as services.
struct LogOptions: ParsableArguments {
    @Option(name: .customLong("log-format"),
            help: "text, or journal: no timestamps and <N> priority prefixes for systemd's journal (the default when standard error is the journal).")
    var format: String?

    func validate() throws {
        if let format, LogFormat(rawValue: format) == nil { throw ValidationError("--log-format must be text or journal") }
    }

    /// Applies the format, when one was given.
    func apply() {
        if let format = format.flatMap(LogFormat.init(rawValue:)) { SyncdLogHandler.format = format }
    }
}

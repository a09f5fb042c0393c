import ArgumentParser
import Logging
import SyncAgent

/// `--log-level` and `--log-format`, for the commands that log as they run.
struct LogOptions: ParsableArguments {
    @Option(name: .customLong("log-level"),
            help: "trace, debug, info, notice, warning, error or critical (default: notice for agent, info for serve, warning for replicate).")
    var level: String?

    @Option(name: .customLong("log-format"),
            help: "text, or journal: no timestamps and <N> priority prefixes for systemd's journal (the default when standard error is the journal).")
    var format: String?

    func validate() throws {
        if let level, Logger.Level(rawValue: level) == nil { throw ValidationError("unknown --log-level \(level)") }
        if let format, LogFormat(rawValue: format) == nil { throw ValidationError("--log-format must be text or journal") }
    }

    /// Applies the format, when one was given, and returns a logger at the level given, else at `defaultLevel`.
    func logger(label: String, defaultLevel: Logger.Level) -> Logger {
        if let format = format.flatMap(LogFormat.init(rawValue:)) { SyncdLogHandler.format = format }
        var logger = Logger(label: label)
        logger.logLevel = level.flatMap(Logger.Level.init(rawValue:)) ?? defaultLevel
        return logger
    }
}

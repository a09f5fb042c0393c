import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Locking
import Logging

/// How log lines are written to standard error.
public enum LogFormat: String, Sendable, CaseIterable {
    /// `2026-11-23T15:45:38+0000 info syncd.listener: message key=value`, for a terminal or a file.
    case text
    /// `<6>syncd.listener: message key=value`: no timestamp (the journal adds its own) and the
    /// syslog priority in front (sd-daemon(3)), so `journalctl -p warning` filters by level.
    case journal
}

/// syncd's one log handler: lines to standard error, as text or for the
/// systemd journal (see ``LogFormat``), with the user information of any URL
/// in them hidden, so credentials never reach a log.
///
/// ```swift
/// SyncdLogHandler.bootstrap()            // once, first thing in main
/// SyncdLogHandler.format = .journal      // `--log-format journal`
/// ```
public struct SyncdLogHandler: LogHandler {
    private static let current = Locked<LogFormat>(.text)

    /// The format every handler writes in now.
    public static var format: LogFormat {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    /// Makes this the process's log handler, writing for the journal when standard
    /// error is connected to it (`JOURNAL_STREAM` names standard error's device and inode).
    public static func bootstrap(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if isJournal(environment["JOURNAL_STREAM"]) { format = .journal }
        LoggingSystem.bootstrap { SyncdLogHandler(label: $0) }
    }

    /// Whether `journalStream` ("device:inode") is standard error (systemd.exec(5)).
    static func isJournal(_ journalStream: String?) -> Bool {
        guard let parts = journalStream?.split(separator: ":"), parts.count == 2,
              let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        guard let status = FileStatus(descriptor: STDERR_FILENO) else { return false }
        return status.device == device && status.inode == inode
    }

    /// The logger's label, shown on each line.
    public let label: String
    /// The least severe level written.
    public var logLevel: Logger.Level = .info
    /// Metadata added to each line.
    public var metadata: Logger.Metadata = [:]

    /// A handler for the logger `label`.
    public init(label: String) {
        self.label = label
    }

    /// The metadata value for `key`.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one event.
    public func log(event: LogEvent) {
        let line = Self.line(event, label: label, metadata: metadata, format: Self.format, now: Date())
        StandardStream.error.write(line)
    }

    /// The text written for `event`, newline included.
    static func line(_ event: LogEvent, label: String, metadata: Logger.Metadata, format: LogFormat, now: Date) -> String {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let fields = merged.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        let text = RemoteURL.redact("\(label): \(event.message)\(fields)")
        switch format {
        case .text:
            return "\(now.formatted(.iso8601)) \(event.level) \(text)\n"
        case .journal:
            // Each line of a multi-line message carries the priority, or the journal reads it as info.
            let prefix = "<\(priority(event.level))>"
            return text.split(separator: "\n", omittingEmptySubsequences: false).map { prefix + $0 + "\n" }.joined()
        }
    }

    /// The syslog priority of a level (sd-daemon(3): 7 debug … 2 critical).
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}

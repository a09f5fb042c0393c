import Locking
import Logging
import Testing

@testable import SyncAgent

/// The listener logs connections it cuts at most once a minute, with the counts
/// since the last such line, never once per connection.
struct ConnectionCutsTests {
    @Test func cutsAreLoggedAtMostOnceAMinuteWithTheirCounts() {
        let lines = Locked<[String]>([])
        let clock = Locked(ContinuousClock.now)
        let logger = Logger(label: "test") { _ in RecordingLogHandler(lines: lines) }
        let cuts = ConnectionCuts(logger: logger, now: { clock.withLock { $0 } })

        // The first cut is logged at once; the next within the minute are not, and are due a minute on.
        #expect(cuts.nextReport == nil)
        cuts.cut(.handshakeTimeout)
        #expect(cuts.nextReport == nil)
        let first = clock.withLock { $0 }
        for _ in 0..<500 { cuts.cut(.handshakeTimeout) }
        #expect(cuts.nextReport == first + .seconds(60))
        for _ in 0..<3 { cuts.cut(.strangerDisplaced) }
        clock.withLock { $0 += .seconds(59) }
        cuts.report()
        #expect(lines.withLock { $0 } == ["closed stalled or surplus connections since the last such line: 1 handshake_timeout"])

        // A minute on, the line gives the counts since the last one.
        clock.withLock { $0 += .seconds(1) }
        cuts.report()
        #expect(lines.withLock { $0 }.last
                == "closed stalled or surplus connections since the last such line: 500 handshake_timeout, 3 stranger_displaced")
        #expect(lines.withLock { $0.count } == 2)
        #expect(cuts.nextReport == nil)

        // Nothing cut, nothing logged, however long it has been.
        clock.withLock { $0 += .seconds(600) }
        cuts.report()
        #expect(lines.withLock { $0.count } == 2)
    }
}

/// Keeps each message logged.
private struct RecordingLogHandler: LogHandler {
    let lines: Locked<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.withLock { $0.append("\(event.message)") }
    }
}

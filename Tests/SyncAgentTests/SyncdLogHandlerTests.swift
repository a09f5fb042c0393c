import Foundation
import Logging
@testable import SyncAgent
import XCTest

/// Log lines for a terminal and for systemd's journal.
final class SyncdLogHandlerTests: XCTestCase {
    private func event(_ level: Logger.Level, _ message: Logger.Message, _ metadata: Logger.Metadata? = nil) -> LogEvent {
        LogEvent(level: level, message: message, metadata: metadata, source: nil, file: #fileID, function: #function, line: #line)
    }

    func testJournalLinesCarryThePriorityAndNoTimestamp() {
        let line = SyncdLogHandler.line(event(.warning, "replication offline", ["in": "2s"]), label: "syncd.replicator",
                                        metadata: ["peer": "kitchen"], format: .journal, now: Date(timeIntervalSince1970: 0))
        XCTAssertEqual(line, "<4>syncd.replicator: replication offline in=2s peer=kitchen\n")
        // Each line of a message keeps its level.
        XCTAssertEqual(SyncdLogHandler.line(event(.error, "first\nsecond"), label: "x", metadata: [:], format: .journal, now: Date()),
                       "<3>x: first\n<3>second\n")
        XCTAssertEqual(Logger.Level.allCases.map(SyncdLogHandler.priority), [7, 7, 6, 5, 4, 3, 2])
    }

    func testTextLinesHaveATimestamp() {
        let line = SyncdLogHandler.line(event(.info, "listening"), label: "syncd", metadata: [:], format: .text,
                                        now: Date(timeIntervalSince1970: 0))
        XCTAssertEqual(line, "1970-01-01T00:00:00Z info syncd: listening\n")
    }

    func testCredentialsInURLsAreHidden() {
        for format in LogFormat.allCases {
            let line = SyncdLogHandler.line(event(.error, "cannot reach http://alice:s3cret@couch.example.org/db", ["url": "https://bob:pw2@h/db"]),
                                            label: "syncd", metadata: [:], format: format, now: Date())
            XCTAssertFalse(line.contains("s3cret"), line)
            XCTAssertFalse(line.contains("pw2"), line)
        }
    }

    func testJournalStreamMustBeStandardError() {
        var info = stat()
        XCTAssertEqual(fstat(STDERR_FILENO, &info), 0)
        XCTAssertTrue(SyncdLogHandler.isJournal("\(info.st_dev):\(info.st_ino)"))
        XCTAssertFalse(SyncdLogHandler.isJournal("\(info.st_dev):\(info.st_ino &+ 1)"))
        XCTAssertFalse(SyncdLogHandler.isJournal(nil))
        XCTAssertFalse(SyncdLogHandler.isJournal("garbage"))
    }
}

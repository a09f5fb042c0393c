import Foundation
import SyncAgent
import XCTest

/// The packaged unit (packaging/syncd.service) run by hand, as systemd would
/// run it: its `ExecStart` line with /tmp paths and the built binary, and
/// `NOTIFY_SOCKET` pointing to a socket of the test's.
final class SystemdUnitTests: XCTestCase {
    /// The unit file's `ExecStart` words.
    static func execStart() throws -> [String] {
        let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("packaging/syncd.service")
        let text = try String(contentsOf: unit, encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ExecStart=") }) else {
            throw TestSupportError("no ExecStart= in \(unit.path)")
        }
        return line.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
    }

    func testReadyAfterTheListenerIsBoundAndStoppingOnSIGTERM() async throws {
        let root = try TemporaryDirectory(prefix: "syncd-unit")
        defer { root.remove() }
        let data = root.path + "/var/lib/syncd"
        for directory in [root.path + "/etc/syncd", root.path + "/run/syncd"] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // The agent's configuration: loopback, a port picked by the system, no discovery.
        try "[listener]\nhost = \"127.0.0.1\"\nport = 0\n[discovery]\nenabled = false\n".write(toFile: root.path + "/etc/syncd/syncd.toml", atomically: true, encoding: .utf8)

        var words = try Self.execStart()
        XCTAssertEqual(words.first, "/usr/bin/syncd")
        XCTAssertEqual(words.dropFirst().first, "agent")
        words = words.map { word in
            word.replacingOccurrences(of: "/usr/bin/syncd", with: ServeProcess.executable)
                .replacingOccurrences(of: "/var/lib/syncd", with: data)
                .replacingOccurrences(of: "/etc/syncd", with: root.path + "/etc/syncd")
                .replacingOccurrences(of: "/run/syncd", with: root.path + "/run/syncd")
        }
        let notify = try NotifySocket(address: root.path + "/notify.sock")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: words[0])
        process.arguments = Array(words.dropFirst())
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.address
        environment["WATCHDOG_USEC"] = "200000"
        process.standardOutput = FileHandle.nullDevice
        // Standard error is "the journal": JOURNAL_STREAM names its device and inode, as systemd sets it.
        let journal = Pipe()
        var stream = stat()
        XCTAssertEqual(fstat(journal.fileHandleForWriting.fileDescriptor, &stream), 0)
        environment["JOURNAL_STREAM"] = "\(stream.st_dev):\(stream.st_ino)"
        process.environment = environment
        process.standardError = journal
        try process.run()
        try journal.fileHandleForWriting.close()
        nonisolated(unsafe) var logged = Data()
        let reader = DispatchGroup()
        reader.enter()
        DispatchQueue.global().async {
            logged = journal.fileHandleForReading.readDataToEndOfFile()
            reader.leave()
        }
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        let untilReady = await notify.receive(line: "READY=1")
        let received = try XCTUnwrap(untilReady, "no READY=1 within 60 s")
        // READY=1 comes once the socket is bound: it is recorded, and it takes connections.
        let record = try XCTUnwrap(ListenerRecord.current(in: data), "READY=1 before listener.json was written")
        XCTAssertTrue(Self.connects(port: record.port), "READY=1 but nothing accepts connections on port \(record.port)")
        XCTAssertFalse(received.contains { $0.contains("STOPPING=1") })
        // The control socket: in the runtime directory, for the owner and the syncd group.
        var socketInfo = stat()
        XCTAssertEqual(stat(root.path + "/run/syncd/control.sock", &socketInfo), 0, "no control socket")
        XCTAssertEqual(socketInfo.st_mode & 0o777, 0o660)
        XCTAssertTrue(try XCTUnwrap(received.last).contains("STATUS=listening on https://127.0.0.1:\(record.port)"), "\(received)")

        let keepAlive = await notify.receive(line: "WATCHDOG=1", timeout: 30)
        XCTAssertNotNil(keepAlive, "no WATCHDOG=1 with WATCHDOG_USEC=200000")

        kill(process.processIdentifier, SIGTERM)
        let stopping = await notify.receive(line: "STOPPING=1", timeout: 30)
        XCTAssertNotNil(stopping, "no STOPPING=1 after SIGTERM")
        await Self.waitForExit(process)
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0)

        // Log lines carry a syslog priority and no timestamp of their own.
        reader.wait()
        let lines = String(decoding: logged, as: UTF8.self).split(separator: "\n")
        let records = lines.filter { $0.hasPrefix("<") }
        XCTAssertTrue(records.contains { $0.hasPrefix("<5>") }, "no notice line for the journal in:\n\(lines.joined(separator: "\n"))")
        for line in records {
            XCTAssertNotNil(line.wholeMatch(of: /<[0-7]>[^<].*/), String(line))
        }
        XCTAssertFalse(lines.contains { $0.first?.isNumber ?? false }, "a timestamped line in:\n\(lines.joined(separator: "\n"))")
    }

    /// A notifier sends to an abstract-namespace socket (`@name`), as systemd may give.
    func testNotifierReachesAnAbstractSocket() async throws {
        let address = "@syncd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let notify = try NotifySocket(address: address)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": address, "WATCHDOG_USEC": "5000000", "WATCHDOG_PID": "1"])
        XCTAssertNil(notifier.watchdogTimeout, "WATCHDOG_PID names another process")
        notifier.status("replicating\n3 peers")
        let message = await notify.receive(timeout: 10)
        XCTAssertEqual(message, "STATUS=replicating 3 peers")
        XCTAssertFalse(SystemdNotifier(environment: [:]).isEnabled)
        XCTAssertEqual(SystemdNotifier(environment: ["NOTIFY_SOCKET": address, "WATCHDOG_USEC": "5000000"]).watchdogTimeout, .seconds(5))
    }

    private static func connects(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    private static func waitForExit(_ process: Process) async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                process.waitUntilExit()
                continuation.resume()
            }
        }
    }
}

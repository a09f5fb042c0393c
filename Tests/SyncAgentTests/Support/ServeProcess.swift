import Foundation
import SyncAgent

/// A `syncd serve` child process: started with its arguments, its URL read
/// from the "listening on URL" line it prints, stopped with a signal.
final class ServeProcess: @unchecked Sendable {
    /// The URL the process printed.
    let url: String
    /// The child process.
    let process: Process
    private let output: Pipe

    /// The `syncd` executable built next to the test bundle (or `$SYNCD_BINARY`).
    static var executable: String {
        if let path = ProcessInfo.processInfo.environment["SYNCD_BINARY"] { return path }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if directory.lastPathComponent.hasSuffix(".xctest") { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent("syncd").path
    }

    private init(url: String, process: Process, output: Pipe) {
        self.url = url
        self.process = process
        self.output = output
    }

    /// Adds the server admin `root` (password `root-password`) to the data
    /// directory, hashed with few PBKDF2 rounds (`syncd user add` itself is
    /// tested in `ListenerServeTests`).
    static func addAdmin(to directory: String) throws {
        try UserStore(directory: directory, iterations: 1000).setPassword("root-password", for: "root", roles: [UserStore.adminRole])
    }

    /// The URL with the credentials of the admin ``addAdmin(to:)`` adds.
    var adminURL: String { url.replacingOccurrences(of: "://", with: "://root:root-password@") }

    /// Runs `syncd serve ARGUMENTS`, expected to refuse to start, and returns
    /// its exit status and everything it printed (standard output and error).
    static func startFailing(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let result = try SyncdCommand.run(["serve"] + arguments, timeout: 30)
        return (result.status, result.output + result.error)
    }

    /// Runs `syncd serve ARGUMENTS` and waits (up to 60 s) for its URL.
    static func start(_ arguments: [String]) async throws -> ServeProcess {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw TestSupportError("no syncd executable at \(executable); build it first (swift build)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        let handle = output.fileHandleForReading
        // Blocking reads go to a dispatch thread, not one of the few cooperative ones.
        let url: String? = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var text = ""
                let deadline = Date().addingTimeInterval(60)
                while Date() < deadline {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    text += String(decoding: data, as: UTF8.self)
                    for line in text.split(separator: "\n") where line.hasPrefix("listening on ") {
                        return continuation.resume(returning: String(line.dropFirst("listening on ".count)))
                    }
                }
                continuation.resume(returning: nil)
            }
        }
        guard let url else {
            process.terminate()
            process.waitUntilExit()
            throw TestSupportError("syncd serve printed no URL")
        }
        return ServeProcess(url: url, process: process, output: output)
    }

    /// Sends `signal` (SIGTERM by default) and waits for the exit; returns the
    /// exit status, or -1 when the process had to be killed after 20 s.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) async -> Int32 {
        let process = self.process
        if process.isRunning { kill(process.processIdentifier, signal) }
        let deadline = ContinuousClock.now + .seconds(20)
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    process.waitUntilExit()
                    continuation.resume()
                }
            }
            return -1
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

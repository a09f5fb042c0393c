import Foundation

/// A command run as a child process with its standard output and error going to
/// files, which the test reads while it runs and after.
final class SyncdRun: @unchecked Sendable {
    let process: Process
    private let outputPath: String
    private let errorPath: String

    init(_ arguments: [String], executable: String = ServeProcess.executable, in directory: String) throws {
        let name = UUID().uuidString
        outputPath = directory + "/\(name).out"
        errorPath = directory + "/\(name).err"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        try process.run()
    }

    /// What it printed to standard output so far.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    /// What it printed to standard error so far.
    var errors: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// Waits (up to 60 s) until standard output contains `text`; false if it exits first.
    func waitForOutput(_ text: String) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if output.contains(text) { return true }
            if !process.isRunning { return output.contains(text) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Waits for the exit (killing it after 60 s) and returns its status.
    func finish() async -> Int32 {
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        return process.terminationStatus
    }

    /// Sends SIGTERM and returns the exit status.
    func stop() async -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        return await finish()
    }
}

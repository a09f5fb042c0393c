import Foundation

/// A `syncd` command run to its end as a child process.
enum SyncdCommand {
    /// Runs `syncd ARGUMENTS` (with `input` on standard input) and returns its
    /// exit status, standard output and standard error; killed after `timeout` seconds.
    /// The default allows for `syncd user add`'s 200,000 PBKDF2 rounds in a ThreadSanitizer build
    /// on two busy cores (over 60 s).
    static func run(_ arguments: [String], input: String? = nil, timeout: TimeInterval = 300) throws -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ServeProcess.executable)
        process.arguments = arguments
        let output = Pipe()
        let error = Pipe()
        let stdin = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try stdin.fileHandleForWriting.close()
        let killer = DispatchWorkItem { if process.isRunning { process.interrupt(); kill(process.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        // Read both pipes to their ends concurrently, so neither fills up.
        let group = DispatchGroup()
        nonisolated(unsafe) var errorData = Data()
        group.enter()
        DispatchQueue.global().async {
            errorData = error.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        killer.cancel()
        return (process.terminationStatus, String(decoding: outputData, as: UTF8.self), String(decoding: errorData, as: UTF8.self))
    }
}

import Foundation

/// `strace` around a `syncd` child process, for tests of what reaches the disk and
/// in which order: the command line prefix to launch it with, and the calls logged.
/// Only the traced calls stop the process (`--seccomp-bpf`), so it runs near full speed.
struct SystemCallTrace {
    /// The log strace writes, one line per call as `strace -f -y` prints it
    /// (each file descriptor followed by its path).
    let log: String
    /// The launcher: `strace ... --` to put before the command.
    let launcher: [String]

    private let traced: String

    /// A trace of `calls` logged in `directory`.
    init(_ calls: [String], in directory: String) {
        log = directory + "/strace-\(UUID().uuidString).log"
        traced = calls.joined(separator: ",")
        launcher = ["/usr/bin/strace", "--seccomp-bpf", "-f", "-y", "-qq", "-e", "signal=none",
                    "-e", "trace=" + traced, "-o", log, "--"]
    }

    /// Attaches strace to the running process `pid` (every thread) and returns once it
    /// traces it; strace ends when the process does. For processes mostly idle, since
    /// attached this way every system call stops the process, not only the traced ones.
    func attach(to pid: Int32) throws -> Process {
        let strace = Process()
        strace.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        strace.arguments = ["-f", "-y", "-qq", "-e", "signal=none", "-e", "trace=" + traced, "-o", log, "-p", String(pid)]
        try strace.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            if status.split(separator: "\n").contains(where: { $0.hasPrefix("TracerPid:") && !$0.hasSuffix("\t0") }) { return strace }
            guard strace.isRunning else { break }
            usleep(10_000)
        }
        strace.terminate()
        throw TestSupportError("strace did not attach to process \(pid)")
    }

    /// The calls logged so far (strace writes each line as its call returns).
    var lines: [String] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Indexes of the lines of `call` on `file` that succeeded (`fsync` also matches `fdatasync`).
    func indexes(of call: String, on file: String) -> [Int] {
        let lines = lines
        return lines.indices.filter { lines[$0].contains(call + "(") && lines[$0].contains("<" + file + ">") && !lines[$0].contains("= -1") }
    }
}

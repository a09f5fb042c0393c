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

    /// A trace of `calls` logged in `directory`.
    init(_ calls: [String], in directory: String) {
        log = directory + "/strace-\(UUID().uuidString).log"
        launcher = ["/usr/bin/strace", "--seccomp-bpf", "-f", "-y", "-qq", "-e", "signal=none",
                    "-e", "trace=" + calls.joined(separator: ","), "-o", log, "--"]
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

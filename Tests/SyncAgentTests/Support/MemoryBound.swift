import Foundation

/// This process's resident memory, from `/proc/self/status`: how tests show that
/// large content streams through in bounded memory.
enum MemoryBound {
    struct Unreadable: Error {}

    /// Whether the suite runs under a sanitizer (`SYNCD_TEST_SANITIZER`, set by
    /// scripts/test), whose shadow memory makes RSS no measure of the code's.
    static var underSanitizer: Bool { ProcessInfo.processInfo.environment["SYNCD_TEST_SANITIZER"] != nil }

    /// Resets the peak (`/proc/self/clear_refs`), so ``peak()`` measures from now.
    static func resetPeak() throws {
        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// The resident memory now, in bytes.
    static func current() throws -> Int { try field("VmRSS") }

    /// The peak resident memory since the last reset, in bytes.
    static func peak() throws -> Int { try field("VmHWM") }

    private static func field(_ name: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
              let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) else { throw Unreadable() }
        return kilobytes * 1024
    }
}

import Foundation

/// A small tmpfs mounted on a new directory: a disk that fills, for tests of what
/// a full disk does. Mounting needs root.
public final class SmallDisk: Sendable {
    /// The mounted directory.
    public let path: String

    /// Mounts a `size` tmpfs (`"8m"`), private to its owner; `nil` where that cannot be done
    /// (not root, no tmpfs), for the test to skip.
    public init?(size: String) {
        guard geteuid() == 0 else { return nil }
        var template = Array((FileManager.default.temporaryDirectory.path + "/syncd-full-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { return nil }
        path = String(cString: made)
        guard Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", path]) else {
            rmdir(path)
            return nil
        }
    }

    /// `name` inside the disk.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Unmounts the disk and removes its directory.
    public func remove() {
        _ = Self.run("/bin/umount", [path])
        rmdir(path)
    }

    private static func run(_ executable: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

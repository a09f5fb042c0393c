import Foundation

/// A fresh directory under the system's temporary folder, removed by ``remove()``.
final class TemporaryDirectory: Sendable {
    /// The directory's path.
    let path: String

    /// Makes a new empty directory named after `prefix`.
    init(prefix: String = "syncd-test") throws {
        let template = FileManager.default.temporaryDirectory.path + "/\(prefix)-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        path = String(cString: made)
    }

    /// Deletes the directory and everything in it.
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Standard output or standard error, written with `write(2)`: what the commands print
/// and the log handler writes, with no buffer between the program and the terminal or journal.
public enum StandardStream: Int32, Sendable {
    case output = 1
    case error = 2

    /// Writes `text` whole (a short write is continued; a failed one, to a closed pipe, is dropped).
    public func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes `bytes` whole, as ``write(_:)-(String)`` does.
    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    private func write(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(rawValue, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}

import Foundation

/// The name a node gives itself: shown to peers at pairing and in lists.
public enum NodeName {
    /// The machine's host name.
    public static var current: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "syncd" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "syncd" : name
    }
}

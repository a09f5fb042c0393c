import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The name a node gives itself: shown to peers at pairing and in lists.
///
/// It is `[node] name` of the agent's configuration, else the host name. The agent
/// records the name it uses in its data directory, beside its identity, so that
/// commands run beside it (`syncd id`, `syncd pair`), which do not read its
/// configuration file, give the same name.
public enum NodeName {
    /// The name the agent of `directory` last used, else the host name.
    public static func of(directory: String) -> String {
        recorded(in: directory) ?? current
    }

    /// The name recorded in `directory`, if any.
    public static func recorded(in directory: String) -> String? {
        guard let text = try? String(contentsOfFile: path(in: directory), encoding: .utf8) else { return nil }
        let name = text.trimmingWhitespace(newlines: true)
        return name.isEmpty || name.utf8.count > 255 || name.contains(where: \.isNewline) ? nil : name
    }

    /// Records `name` as the node's in `directory` (a private file, replaced atomically).
    public static func record(_ name: String, in directory: String) throws {
        guard recorded(in: directory) != name else { return }
        let temporary = path(in: directory) + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data((name + "\n").utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: ["NSFilePath": temporary])
        }
        guard rename(temporary, path(in: directory)) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: ["NSFilePath": path(in: directory)])
        }
    }

    private static func path(in directory: String) -> String { directory + "/node-name" }

    /// The machine's host name.
    public static var current: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "syncd" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "syncd" : name
    }
}

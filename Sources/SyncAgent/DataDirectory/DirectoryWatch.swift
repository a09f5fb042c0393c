import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The names of the files of one directory that are written, renamed into it or
/// deleted, told by the kernel (inotify) as it happens: how the agent hears of a
/// state file another process replaced, without looking at it on a timer.
///
/// ```swift
/// for await name in try DirectoryWatch.changes(of: "/var/lib/syncd") {
///     if name == "peers.json" || name == nil { … }   // nil: notifications were lost
/// }
/// ```
enum DirectoryWatch {
    /// Each name changed in `directory` from now on, as the kernel reports it (a file
    /// written and closed, moved in, or deleted); `nil` when the kernel dropped some,
    /// so any file may have changed.
    static func changes(of directory: String) throws(WatchError) -> AsyncStream<String?> {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { throw WatchError(call: "inotify_init1", code: errno) }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_ONLYDIR)
        guard inotify_add_watch(descriptor, directory, mask) >= 0 else {
            let code = errno
            close(descriptor)
            throw WatchError(call: "inotify_add_watch \(directory)", code: code)
        }
        return try KernelNotifications.stream(reading: descriptor) { read in
            guard let read else { return [nil] }
            return names(in: read)
        }
    }

    /// The names the events in `bytes` (whole `inotify_event`s) are about; `nil` for a queue overflow.
    private static func names(in bytes: UnsafeRawBufferPointer) -> [String?] {
        var names: [String?] = []
        var offset = 0
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= bytes.count {
            let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
            let nameBytes = UnsafeRawBufferPointer(rebasing: bytes[(offset + header)..<min(bytes.count, offset + header + Int(event.len))])
            offset += header + Int(event.len)
            if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                names.append(nil)
            } else if !nameBytes.isEmpty {
                names.append(String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self))
            }
        }
        return names
    }
}

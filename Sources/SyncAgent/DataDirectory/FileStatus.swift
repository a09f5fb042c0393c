// `struct stat`'s fields belong, for Swift, to whichever C module first included
// <sys/stat.h>: where a dependency brings CoreFoundation in, CoreFoundation. This one file
// imports it for them (nothing of it is called, so none of Foundation is linked).
import CoreFoundation
#if canImport(Glibc)
import Glibc
#endif

/// What `stat(2)` tells of a file: the one place the agent reads it (the store reads its own).
struct FileStatus: Sendable {
    /// The type and permission bits.
    let mode: mode_t
    let device: UInt64
    let inode: UInt64
    let size: Int64
    /// The last modification, seconds and nanoseconds.
    let modified: (seconds: Int, nanoseconds: Int)

    /// The status of the file at `path` (links followed); `nil` with `errno` set when it cannot be read.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The status of the open file `descriptor`; `nil` with `errno` set when it cannot be read.
    init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        self.init(info)
    }

    private init(_ info: stat) {
        mode = info.st_mode
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = (info.st_mtim.tv_sec, info.st_mtim.tv_nsec)
    }

    var isSocket: Bool { mode & S_IFMT == S_IFSOCK }
    var isDirectory: Bool { mode & S_IFMT == S_IFDIR }
    /// The permission bits (`0o640`).
    var permissions: mode_t { mode & 0o777 }
}

import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Locking

/// What the kernel tells on one descriptor (inotify, a netlink socket), read on a thread
/// of its own that sleeps in `poll` while nothing happens: the one reading loop behind
/// ``DirectoryWatch`` and ``AddressWatch``, so neither polls on a timer.
enum KernelNotifications {
    /// What a read gave: the bytes of one read, or `nil` when the kernel dropped
    /// notifications (its queue overflowed), so anything may have changed.
    typealias Read = UnsafeRawBufferPointer?

    /// A stream of what `parse` makes of each read of `descriptor`, which it owns from now
    /// on: ending the stream (its consumer cancelled) stops the thread and closes it.
    /// The stream ends by itself if reading fails for good.
    static func stream<Element: Sendable>(
        reading descriptor: Int32, _ parse: @escaping @Sendable (Read) -> [Element]
    ) throws(WatchError) -> AsyncStream<Element> {
        // How the stream's end wakes the thread: a byte written to one end.
        var ends: [Int32] = [0, 0]
        let flags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        guard socketpair(AF_UNIX, flags, 0, &ends) == 0 else {
            let code = errno
            close(descriptor)
            throw WatchError(call: "socketpair", code: code)
        }
        let (stop, wake) = (ends[0], ends[1])
        // Whether the thread closed `wake`: the stream's end must not write to a number reused since.
        let closed = Locked(false)
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(256))
        continuation.onTermination = { _ in
            closed.withLock { closed in
                guard !closed else { return }
                var byte: UInt8 = 1
                _ = write(wake, &byte, 1)
            }
        }
        DetachedThread.start(name: "syncd-kernel") {
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            var watched = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
            reading: while true {
                guard poll(&watched, 2, -1) >= 0 else {
                    if errno == EINTR { continue }
                    break
                }
                if watched[1].revents != 0 { break }
                guard watched[0].revents & Int16(POLLIN) != 0 else {
                    if watched[0].revents != 0 { break }  // POLLERR, POLLHUP: the descriptor is done
                    continue
                }
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                let elements: [Element]
                if count >= 0 {
                    elements = buffer.withUnsafeBytes { parse(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
                } else {
                    switch errno {
                    case EINTR, EAGAIN: continue reading
                    case ENOBUFS: elements = parse(nil)
                    default: break reading
                    }
                }
                for element in elements { continuation.yield(element) }
            }
            continuation.finish()
            closed.withLock { closed in
                closed = true
                close(wake)
            }
            close(stop)
            close(descriptor)
        }
        return stream
    }
}

/// The kernel would not watch: a system call failed (say, the limit of inotify instances was reached).
struct WatchError: Error, CustomStringConvertible {
    /// The call that failed.
    let call: String
    /// Its `errno`.
    let code: Int32

    /// What went wrong, for people.
    var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
}

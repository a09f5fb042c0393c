import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Tells systemd how the service is doing (sd_notify(3)): `READY=1` once the
/// listener is bound (the unit is `Type=notify`), `STOPPING=1` when shutdown
/// begins, `WATCHDOG=1` keep-alives, and `STATUS=` lines for `systemctl status`.
///
/// It writes datagrams to the Unix socket named by `NOTIFY_SOCKET` (a path, or
/// `@name` in the abstract namespace), so no libsystemd is needed. Without
/// `NOTIFY_SOCKET` (not run by systemd) every call does nothing.
///
/// ```swift
/// let notifier = SystemdNotifier()
/// notifier.notify(ready: true, status: "listening on https://[::]:6984")
/// ```
public struct SystemdNotifier: Sendable {
    /// The socket messages go to; `nil` when not run by systemd.
    public let socketPath: String?
    /// How often systemd expects `WATCHDOG=1` (`WATCHDOG_USEC`, when meant for this process).
    public let watchdogTimeout: Duration?

    /// A notifier configured from `environment` (the process's by default).
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        // WATCHDOG_PID, when set, names the process the watchdog is for (sd_watchdog_enabled(3)).
        let forThisProcess = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if path != nil, forThisProcess, let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0 {
            watchdogTimeout = .microseconds(usec)
        } else {
            watchdogTimeout = nil
        }
    }

    /// Whether systemd listens (`NOTIFY_SOCKET` is set).
    public var isEnabled: Bool { socketPath != nil }

    /// `READY=1`, with a status line.
    public func ready(status: String) {
        send("READY=1\nSTATUS=\(Self.oneLine(status))")
    }

    /// `STOPPING=1`: shutdown has begun.
    public func stopping() {
        send("STOPPING=1\nSTATUS=stopping")
    }

    /// A `STATUS=` line shown by `systemctl status`.
    public func status(_ text: String) {
        send("STATUS=\(Self.oneLine(text))")
    }

    /// Sends `WATCHDOG=1` every half of ``watchdogTimeout`` until cancelled, as
    /// sd_watchdog_enabled(3) advises. It runs on the cooperative thread pool, so
    /// a process whose tasks no longer run stops the keep-alives and systemd restarts it.
    public func keepAlive() async {
        guard let timeout = watchdogTimeout else { return }
        while !Task.isCancelled {
            send("WATCHDOG=1")
            do { try await Task.sleep(for: timeout / 2) } catch { return }
        }
    }

    /// Sends one notification datagram; failures are ignored, as sd_notify's callers do.
    public func send(_ message: String) {
        guard let socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // the abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: path)
        }
        // An abstract address's length counts exactly its bytes; a path's includes the NUL.
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.count + (path.first == 0 ? 0 : 1)
        let bytes = Array(message.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, bytes, bytes.count, 0, socketAddress, socklen_t(length))
            }
        }
    }

    /// `STATUS=` takes one line.
    private static func oneLine(_ text: String) -> String {
        text.replacing("\n", with: " ")
    }
}

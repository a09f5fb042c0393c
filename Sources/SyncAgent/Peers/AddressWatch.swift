import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Tells when this host's interfaces or addresses may have changed, as the kernel
/// announces it (rtnetlink: a link up or down, an IPv4 or IPv6 address added or
/// removed): how the agent follows its own addresses without looking on a timer.
/// It says only that something changed; ``LocalAddresses`` tells what is there now.
///
/// ```swift
/// for await _ in try AddressWatch.changes() { let now = LocalAddresses.lan() … }
/// ```
enum AddressWatch {
    // <linux/rtnetlink.h>, which Glibc does not bring in.
    private static let routeProtocol: Int32 = 0  // NETLINK_ROUTE
    private static let groups: UInt32 = 0x1 | 0x10 | 0x100  // RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR

    /// One element per batch of changes the kernel announces in the calling thread's
    /// network namespace from now on (also when it dropped some: anything may have changed).
    static func changes() throws(WatchError) -> AsyncStream<Void> {
        let descriptor = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), routeProtocol)
        guard descriptor >= 0 else { throw WatchError(call: "socket(AF_NETLINK)", code: errno) }
        // struct sockaddr_nl: nl_family (u16), nl_pad (u16), nl_pid (u32, 0: the kernel picks), nl_groups (u32).
        var address = [UInt8](repeating: 0, count: 12)
        address.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: sa_family_t(AF_NETLINK), toByteOffset: 0, as: sa_family_t.self)
            bytes.storeBytes(of: groups, toByteOffset: 8, as: UInt32.self)
        }
        let bound = address.withUnsafeBytes { bind(descriptor, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count)) }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            throw WatchError(call: "bind(NETLINK_ROUTE)", code: code)
        }
        return try KernelNotifications.stream(reading: descriptor) { _ in [()] }
    }
}

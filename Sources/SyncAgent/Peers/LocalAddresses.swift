import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The addresses of this machine's interfaces that are up: where a listener
/// can be reached, and what an invitation URL may carry. Link-local IPv6
/// addresses are left out, as they need an interface scope to be used.
public enum LocalAddresses {
    /// The addresses other machines can reach this one at: not loopback, IPv4 first.
    public static func lan() -> [String] {
        let addresses = up(families: [Int32(AF_INET), Int32(AF_INET6)]).filter { !$0.hasPrefix("127.") && $0 != "::1" }
        return addresses.filter { !$0.contains(":") } + addresses.filter { $0.contains(":") }
    }

    /// The addresses a listener bound to `host` is reached at: every address of
    /// the interfaces that are up for a wildcard (IPv4 ones for `0.0.0.0`, all for
    /// `::`), else `host` itself.
    public static func reachable(boundTo host: String) -> [String] {
        let families: Set<Int32>
        switch host {
        case "0.0.0.0": families = [Int32(AF_INET)]
        case "::", "[::]": families = [Int32(AF_INET), Int32(AF_INET6)]
        default: return [host]
        }
        let addresses = up(families: families)
        return addresses.isEmpty ? [host] : addresses
    }

    /// Whether this host can listen on IPv6 (`::`); a namespace or kernel without
    /// it must listen on `0.0.0.0` instead.
    public static var canListenOnIPv6: Bool {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        } == 0
    }

    /// The numeric addresses of the interfaces that are up, in the system's order.
    static func up(families: Set<Int32>) -> [String] {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return [] }
        defer { freeifaddrs(first) }
        var addresses: [String] = []
        var next = first
        while let entry = next?.pointee {
            next = entry.ifa_next
            guard let address = entry.ifa_addr, families.contains(Int32(address.pointee.sa_family)),
                  entry.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            let length = socklen_t(Int32(address.pointee.sa_family) == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(address, length, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            let numeric = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if numeric.lowercased().hasPrefix("fe80:") || numeric.contains("%") { continue }  // link-local: needs a zone
            if !addresses.contains(numeric) { addresses.append(numeric) }
        }
        return addresses
    }
}

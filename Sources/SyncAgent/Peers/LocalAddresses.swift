import Foundation

/// The addresses other machines can reach this one at: those of interfaces
/// that are up, not loopback; IPv4 first, then global IPv6. Link-local IPv6
/// addresses are left out, as they need an interface scope to be used.
public enum LocalAddresses {
    /// The LAN addresses, IPv4 first.
    public static func lan() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var v4: [String] = []
        var v6: [String] = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            let flags = Int32(entry.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0, let address = entry.pointee.ifa_addr else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                guard getnameinfo(address, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
                v4.append(text(host))
            case AF_INET6:
                guard getnameinfo(address, socklen_t(MemoryLayout<sockaddr_in6>.size), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
                let address = text(host)
                if !address.lowercased().hasPrefix("fe80") { v6.append(address) }
            default:
                continue
            }
        }
        return Array(Set(v4)).sorted() + Array(Set(v6)).sorted()
    }

    private static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The addresses a listener bound to `host` is reached at: the LAN
    /// addresses for a wildcard host (`0.0.0.0`, `::`), else `host` itself.
    public static func reachable(boundTo host: String) -> [String] {
        guard host == "0.0.0.0" || host == "::" || host.isEmpty else { return [host] }
        let addresses = lan()
        return addresses.isEmpty ? [host == "::" ? "::1" : "127.0.0.1"] : addresses
    }
}

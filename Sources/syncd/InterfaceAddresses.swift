import Foundation

/// The addresses of this machine's interfaces that are up, for telling people
/// where a listener bound to a wildcard address (`0.0.0.0`, `::`) can be reached.
enum InterfaceAddresses {
    /// The URLs `url` stands for: one per interface address when its host is a
    /// wildcard (IPv4 addresses for `0.0.0.0`; IPv4 and IPv6, link-local aside,
    /// for `::`), else `url` itself.
    static func urls(for url: String, host: String) -> [String] {
        let wildcard: String
        let families: Set<Int32>
        switch host {
        case "0.0.0.0": (wildcard, families) = ("0.0.0.0", [Int32(AF_INET)])
        case "::", "[::]": (wildcard, families) = ("[::]", [Int32(AF_INET), Int32(AF_INET6)])
        default: return [url]
        }
        guard let range = url.range(of: "://" + wildcard + ":") else { return [url] }
        let addresses = up(families: families)
        guard !addresses.isEmpty else { return [url] }
        return addresses.map { address in
            url.replacingCharacters(in: range, with: "://" + (address.contains(":") ? "[\(address)]" : address) + ":")
        }
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

import CAvahi
import Glibc

/// Conversions between avahi's C values and this module's Swift values.
enum AvahiConversions {
    /// A new avahi string list holding `strings` in order; free it with `avahi_string_list_free`.
    static func stringList(_ strings: [String]) -> UnsafeMutablePointer<AvahiStringList>? {
        var list: UnsafeMutablePointer<AvahiStringList>?
        for string in strings {
            list = string.withCString { avahi_string_list_add(list, $0) }
        }
        // avahi_string_list_add prepends.
        return avahi_string_list_reverse(list)
    }

    /// A TXT record as a dictionary: keys lowercased, the first of duplicate keys kept,
    /// a key without `=` present with an empty value (RFC 6763 §6.4).
    static func txt(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [String: String] {
        var result: [String: String] = [:]
        var node = list
        while let current = node {
            let bytes = UnsafeBufferPointer(start: avahi_string_list_get_text(current), count: Int(avahi_string_list_get_size(current)))
            let separator = bytes.firstIndex(of: UInt8(ascii: "=")) ?? bytes.endIndex
            let key = String(decoding: bytes[..<separator], as: UTF8.self).lowercased()
            let value = separator < bytes.endIndex ? String(decoding: bytes[(separator + 1)...], as: UTF8.self) : ""
            if !key.isEmpty, result[key] == nil { result[key] = value }
            node = avahi_string_list_get_next(current)
        }
        return result
    }

    /// An avahi address seen on interface `interface`, with the interface's name for scoping.
    static func serviceAddress(_ address: UnsafePointer<AvahiAddress>, interface: Int32) -> ServiceAddress {
        var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        avahi_address_snprint(&text, text.count, address)
        let family: ServiceAddress.Family = address.pointee.proto == AvahiProtocol(AVAHI_PROTO_INET6) ? .ipv6 : .ipv4
        return ServiceAddress(
            family: family, ip: text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, interfaceIndex: interface,
            interfaceName: interfaceName(interface)
        )
    }

    static func interfaceName(_ index: Int32) -> String? {
        guard index > 0 else { return nil }
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(index), &name) != nil else { return nil }
        return name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// The RDATA of an SRV record (RFC 2782): priority 0, weight 0, `port`, and `target`
    /// (an avahi-escaped host name such as `alpha.local`) in DNS wire format.
    static func srvRecordData(port: UInt16, target: String) -> [UInt8] {
        var data: [UInt8] = [0, 0, 0, 0, UInt8(port >> 8), UInt8(port & 0xFF)]
        for label in labels(target) where !label.isEmpty {
            data.append(UInt8(min(label.count, 63)))
            data.append(contentsOf: label.prefix(63))
        }
        data.append(0)
        return data
    }

    /// The labels of an avahi-escaped domain name (`\.` and `\\` escapes, `\DDD` decimal bytes).
    static func labels(_ name: String) -> [[UInt8]] {
        var labels: [[UInt8]] = [[]]
        var bytes = Array(name.utf8)[...]
        while let byte = bytes.popFirst() {
            switch byte {
            case UInt8(ascii: "."):
                labels.append([])
            case UInt8(ascii: "\\"):
                let digits = bytes.prefix(3)
                if digits.count == 3, digits.allSatisfy({ (48...57).contains($0) }),
                   let value = UInt8(String(decoding: digits, as: UTF8.self)) {
                    labels[labels.count - 1].append(value)
                    bytes = bytes.dropFirst(3)
                } else if let escaped = bytes.popFirst() {
                    labels[labels.count - 1].append(escaped)
                }
            default:
                labels[labels.count - 1].append(byte)
            }
        }
        return labels
    }
}

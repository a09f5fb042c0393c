import Store

/// Percent-encoding of URL path segments and query values.
enum PathEncoding {
    /// One path segment: everything but unreserved characters encoded as UTF-8 `%XX`, `/` included.
    static func segment(_ text: String) -> String {
        encode(text, keeping: isUnreserved)
    }

    /// Whether `byte` is an unreserved character of RFC 3986: an ASCII letter or digit, or `-._~`.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// `text` with every UTF-8 byte `kept` refuses written `%XX` (upper-case hex).
    static func encode(_ text: String, keeping kept: (UInt8) -> Bool) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if kept(byte) {
                encoded.append(byte)
            } else {
                encoded += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// `text` with each `%XX` decoded; `nil` for a `%` not followed by two hex digits or bytes
    /// that are not UTF-8, as Foundation's `removingPercentEncoding` answers.
    static func decode(_ text: some StringProtocol) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Hex.nibble), let low = iterator.next().flatMap(Hex.nibble) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// A document id as a path: `_design/` and `_local/` keep their slash, as CouchDB expects.
    static func documentID(_ id: String) -> String {
        for prefix in ["_design/", "_local/"] where id.hasPrefix(prefix) {
            return prefix + segment(String(id.dropFirst(prefix.count)))
        }
        return segment(id)
    }

    /// A query string from names and values.
    static func query(_ items: [(String, String)]) -> String {
        items.isEmpty ? "" : "?" + items.map { "\(segment($0.0))=\(segment($0.1))" }.joined(separator: "&")
    }
}

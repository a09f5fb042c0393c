import Crypto
import Store

/// A node's ID: the SHA-256 fingerprint of its certificate, written for
/// people as base32 in dash-separated groups of four, like Syncthing's device
/// IDs (`MFRG-GZDF-…`, 13 groups). Trust is pinned to it: a peer is paired
/// with an ID, and a connection is that peer only if the certificate it
/// presents has this fingerprint.
public struct NodeID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The 32 bytes of the fingerprint.
    public let bytes: [UInt8]

    /// The ID of a DER-encoded certificate.
    public init(certificateDER: [UInt8]) {
        bytes = Array(SHA256.hash(data: certificateDER))
    }

    /// Parses an ID as people write it (base32, dashes and case ignored) or as
    /// 64 hex digits of the fingerprint (colons ignored); `nil` if it is neither.
    public init?(_ text: String) {
        let compact = text.filter { $0 != "-" && $0 != ":" && $0 != " " }
        if compact.count == 64, let bytes = Hex.bytes(compact) {
            self.bytes = bytes
        } else if compact.count == 52, let bytes = Base32.decode(compact.uppercased()), bytes.count == 32 {
            self.bytes = bytes
        } else {
            return nil
        }
    }

    /// The fingerprint as 64 lower-case hex digits.
    public var fingerprint: String { Hex.string(bytes) }

    /// The full ID: 52 base32 characters in groups of four.
    public var description: String { Self.grouped(Base32.encode(bytes)) }

    /// The ID without dashes, as carried in an invitation URL.
    public var compact: String { Base32.encode(bytes) }

    /// The first two groups: enough to tell peers apart at a glance.
    public var short: String { String(description.prefix(9)) }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = NodeID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a node ID: \(text)"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    private static func grouped(_ text: String) -> String {
        var result = ""
        for (index, character) in text.enumerated() {
            if index > 0 && index % 4 == 0 { result.append("-") }
            result.append(character)
        }
        return result
    }
}

/// RFC 4648 base32 without padding.
enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var buffer = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of upper-case base32 text; `nil` for any other character.
    static func decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer = 0
        var bits = 0
        for character in text.utf8 {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = ((buffer << 5) | value) & 0xFFFF
            bits += 5
            if bits >= 8 {
                output.append(UInt8((buffer >> (bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return output
    }
}

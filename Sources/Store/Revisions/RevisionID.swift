/// A revision id such as `3-917fa2381192822767f010b95b45325b`: the generation
/// (the revision's depth in its document's tree) and a digest.
///
/// Revision ids order by generation, then by digest in ASCII order: the order
/// CouchDB uses to pick a deterministic winner among conflicting leaves.
public struct RevisionID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The depth in the revision tree, counting from 1.
    public let generation: Int
    /// The digest part, unique among revisions of one generation.
    public let digest: String

    /// A revision id from its parts. `digest` must not be empty; generation 0 is used only by local documents.
    public init(generation: Int, digest: String) {
        precondition(generation >= 0 && !digest.isEmpty, "invalid revision id")
        self.generation = generation
        self.digest = digest
    }

    /// Parses `N-digest`; `nil` when the text is not a revision id.
    public init?(_ text: String) {
        var text = text
        guard let parsed = text.withUTF8(Self.parse) else { return nil }
        self = parsed
    }

    /// Parses `N-digest` in a part of a string, as the `String` initializer does.
    public init?(_ text: Substring) {
        var text = text
        guard let parsed = text.withUTF8(Self.parse) else { return nil }
        self = parsed
    }

    /// Parses `N-digest` from its UTF-8 bytes, as the `String` initializer does.
    public init?(utf8 text: UnsafeBufferPointer<UInt8>) {
        guard let parsed = Self.parse(text) else { return nil }
        self = parsed
    }

    /// Parses `N-digest` in any string type, as the `String` initializer does.
    public init?(_ text: some StringProtocol) {
        self.init(String(text))
    }

    /// `N-digest` from its UTF-8 bytes: N a decimal from 1 to 2^40 - 1 (no sign), the digest
    /// 1 to 128 printable ASCII characters other than `"`. Works on the bytes, with no
    /// generic string code: the replicator and `_revs_diff` parse thousands a second.
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> RevisionID? {
        guard let (generation, digest) = parts(bytes), !digest.isEmpty, digest.count <= 128,
              digest.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") })
        else { return nil }
        return RevisionID(generation: generation, digest: String(decoding: digest, as: UTF8.self))
    }

    /// The generation of `N-digest` and the bytes of its digest, unchecked: nil when N is not
    /// a decimal from 1 to 2^40 - 1 followed by `-`.
    static func parts(_ bytes: UnsafeBufferPointer<UInt8>) -> (generation: Int, digest: UnsafeBufferPointer<UInt8>)? {
        guard let dash = bytes.firstIndex(of: UInt8(ascii: "-")), dash > 0 else { return nil }
        var generation = 0
        for byte in bytes[..<dash] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            generation = generation * 10 + Int(byte - UInt8(ascii: "0"))
            guard generation < 1 << 40 else { return nil }
        }
        guard generation >= 1 else { return nil }
        return (generation, UnsafeBufferPointer(rebasing: bytes[(dash + 1)...]))
    }

    public var description: String { "\(generation)-\(digest)" }

    public static func < (lhs: RevisionID, rhs: RevisionID) -> Bool {
        if lhs.generation != rhs.generation { return lhs.generation < rhs.generation }
        // Byte order; compared in place where both strings hold their UTF-8 contiguously (nearly always).
        let inPlace = lhs.digest.utf8.withContiguousStorageIfAvailable { left in
            rhs.digest.utf8.withContiguousStorageIfAvailable { right in left.lexicographicallyPrecedes(right) }
        }
        return (inPlace ?? nil) ?? lhs.digest.utf8.lexicographicallyPrecedes(rhs.digest.utf8)
    }
}

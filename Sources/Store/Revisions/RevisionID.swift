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
    public init?(_ text: some StringProtocol) {
        guard let dash = text.firstIndex(of: "-"),
              let generation = Int(text[..<dash]), generation >= 1, generation < 1 << 40,
              text[..<dash].first != "+"
        else { return nil }
        let digest = text[text.index(after: dash)...]
        guard !digest.isEmpty, digest.utf8.count <= 128,
              digest.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") })
        else { return nil }
        self.generation = generation
        self.digest = String(digest)
    }

    public var description: String { "\(generation)-\(digest)" }

    public static func < (lhs: RevisionID, rhs: RevisionID) -> Bool {
        if lhs.generation != rhs.generation { return lhs.generation < rhs.generation }
        return lhs.digest.utf8.lexicographicallyPrecedes(rhs.digest.utf8)
    }
}

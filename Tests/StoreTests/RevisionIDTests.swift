import Store
import Testing

/// Revision ids as CouchDB writes them, and everything else refused.
@Suite struct RevisionIDTests {
    @Test func wellFormedIdsParseFromStringsAndSubstrings() throws {
        let id = try #require(RevisionID("12-917fa2381192822767f010b95b45325b"))
        #expect(id.generation == 12)
        #expect(id.digest == "917fa2381192822767f010b95b45325b")
        #expect(id.description == "12-917fa2381192822767f010b95b45325b")
        let text = "[3-abc]"
        #expect(RevisionID(text.dropFirst().dropLast()) == RevisionID(generation: 3, digest: "abc"))
        #expect(RevisionID("007-a")?.generation == 7)
        #expect(RevisionID("1-a-b")?.digest == "a-b")
        #expect(RevisionID("1099511627775-x")?.generation == (1 << 40) - 1)
        #expect(RevisionID("1-" + String(repeating: "f", count: 128)) != nil)
        #expect(parsed(viaAnyStringType: "2-b") == RevisionID(generation: 2, digest: "b"))
    }

    @Test(arguments: [
        "", "-", "1-", "-abc", "0-abc", "+1-abc", " 1-abc", "1 -abc", "a-abc", "1.5-abc", "abc",
        "1099511627776-x", "99999999999999999999999-x", "1-ab cd", "1-ab\"cd", "1-é", "1-\u{7F}",
        "1-" + String(repeating: "f", count: 129),
    ])
    func malformedIdsAreRefused(_ text: String) {
        #expect(RevisionID(text) == nil)
        #expect(RevisionID(Substring(text)) == nil)
        #expect(parsed(viaAnyStringType: text) == nil)
    }

    @Test func revisionsOrderByGenerationThenByTheDigestsBytes() throws {
        func rev(_ text: String) throws -> RevisionID { try #require(RevisionID(text)) }
        let long = String(repeating: "f", count: 40)
        let ordered = try ["1-B", "1-a", "1-ab", "1-b", "1-" + long, "1-" + long + "0", "2-a", "10-a"].map(rev)
        for (index, revision) in ordered.enumerated() {
            #expect(!(revision < revision))
            for later in ordered[(index + 1)...] {
                #expect(revision < later, "\(revision) < \(later)")
                #expect(!(later < revision), "\(later) < \(revision)")
            }
        }
        #expect(ordered.shuffled().sorted() == ordered)
    }

    /// Goes through the generic initializer, which the other calls do not reach.
    private func parsed(viaAnyStringType text: some StringProtocol) -> RevisionID? {
        RevisionID(text)
    }
}

@testable import SyncAgent
import Testing

/// Percent-encoding as syncd writes URLs and reads request paths, queries and invitations.
@Suite struct PathEncodingTests {
    @Test func aSegmentKeepsOnlyUnreservedCharacters() {
        #expect(PathEncoding.segment("a-Z_0.~") == "a-Z_0.~")
        #expect(PathEncoding.segment("a/b c?#%") == "a%2Fb%20c%3F%23%25")
        #expect(PathEncoding.segment("é") == "%C3%A9", "each UTF-8 byte, upper-case hex")
        #expect(PathEncoding.documentID("_design/a/b") == "_design/a%2Fb")
        #expect(CouchResponder.pathSegment("a/b:c@d e") == "a%2Fb:c@d%20e", "a path's own characters kept")
        #expect(CouchResponder.pathSegment("a;b?c#d") == "a%3Bb%3Fc%23d", "no path parameters, query or fragment")
    }

    @Test func decodingUndoesEncodingAndRefusesWhatFoundationRefused() {
        for text in ["", "plain", "a/b c?#%", "é ✓ 日本", "%"] {
            #expect(PathEncoding.decode(PathEncoding.segment(text)) == text)
        }
        #expect(PathEncoding.decode("a%2fb%2F") == "a/b/", "either case")
        #expect(PathEncoding.decode("100%") == nil, "a % with nothing after it")
        #expect(PathEncoding.decode("%4") == nil, "a % with one digit")
        #expect(PathEncoding.decode("%zz") == nil, "not hex")
        #expect(PathEncoding.decode("%FF") == nil, "not UTF-8")
        #expect(PathEncoding.decode("%C3%A9") == "é")
    }

    @Test func whitespaceIsTrimmedAtTheEndsOnly() {
        #expect(" \t a b \t ".trimmingWhitespace() == "a b")
        #expect(" a\n".trimmingWhitespace() == "a\n", "line ends stay unless asked")
        #expect(" a\r\n".trimmingWhitespace(newlines: true) == "a")
        #expect(" \n ".trimmingWhitespace(newlines: true) == "")
        #expect("\"etag\" ".trimming { $0 == "\"" || $0 == " " } == "etag")
    }
}

import JSON
import Store
@testable import SyncAgent
import Testing

/// The `_bulk_get` answer splitter gives the same elements however the answer is cut
/// into chunks, and refuses bad framing with an error.
struct ResultsSplitterTests {
    /// Strings with escaped quotes and backslashes, brackets and commas inside strings,
    /// members before and after `results`, nesting, whitespace everywhere.
    static let sample = Array(#"""
     { "note" : {"a":[1,{"b":"]}\""}]} , "n": -1.5e3, "t":true ,
      "results" : [ {"id":"a\"b","docs":[{"ok":{"_id":"a\"b","x":"},{\\","y":[[],{}]}}]} ,
        {"id":"c","docs":[{"error":{"id":"c","error":"not_found","reason":"\\\"]"}}]},"plain",12 ,[ ] ] ,
      "after": "results" }
    """#.utf8)

    static let expected: [JSON] = [
        ["id": "a\"b", "docs": [["ok": ["_id": "a\"b", "x": "},{\\", "y": [[], [:]]]]]],
        ["id": "c", "docs": [["error": ["id": "c", "error": "not_found", "reason": "\\\"]"]]]],
        "plain", 12, [],
    ]

    private func split(_ chunks: [ArraySlice<UInt8>], limit: Int = 1 << 20) throws -> [JSON] {
        var splitter = ResultsSplitter(limit: limit)
        var elements: [JSON] = []
        for chunk in chunks {
            elements += try splitter.elements(in: chunk).map { try JSON(parsing: $0) }
        }
        try splitter.finish()
        return elements
    }

    @Test func theSampleWholeGivesEachElement() throws {
        #expect(try split([Self.sample[...]]) == Self.expected)
    }

    @Test func everySplitPointGivesTheSameElements() throws {
        for point in 0...Self.sample.count {
            let chunks = [Self.sample[..<point], Self.sample[point...]]
            #expect(try split(chunks) == Self.expected, "split at byte \(point)")
        }
        // And one byte at a time: every string, escape and bracket cut from its neighbours.
        #expect(try split(Self.sample.indices.map { Self.sample[$0...$0] }) == Self.expected)
    }

    @Test func everyCutShortAnswerIsAnError() {
        for end in 0..<Self.sample.count where Self.sample[end...].contains(where: { $0 > 0x20 }) {
            #expect(throws: ResultsSplitter.FramingError.self, "cut at byte \(end)") {
                try split([Self.sample[..<end]])
            }
        }
    }

    @Test(arguments: [
        (#"{"results":[{"id":"a"}, {"id":"b"#, "ended inside a string"),
        (#"[{"id":"a"}]"#, "not a JSON object"),
        (#"{"results":{"id":"a"}}"#, "not an array"),
        (#"{"other":[]}"#, "has no results"),
        (#"{"results":[],"results":[]}"#, "twice"),
        (#"{"results":[{"id":"a"}}]}"#, "mismatched"),
        (#"{"results":[{"id":"a"},]}"#, "empty element"),
        (#"{"results":[,{"id":"a"}]}"#, "empty element"),
        (#"{"results":[]} {"results":[]}"#, "after the answer"),
        (#"{"results":[] "x":1}"#, "comma or the end"),
        (#"{"x" 1, "results":[]}"#, "colon"),
        (#"{"x":, "results":[]}"#, "without a value"),
        (#"{"results":[{"id":"a","pad":"012345678901234567890123456789012345678901234567890123456789"}]}"#, "over 64 bytes"),
        (#"{"pad":"0123456789012345678901234567890123456789012345678901234567890123456789","results":[]}"#, "between the elements"),
    ])
    func badFramingIsAClearError(answer: String, reason: String) {
        let bytes = Array(answer.utf8)
        var splitter = ResultsSplitter(limit: 64)
        do {
            _ = try splitter.elements(in: bytes)
            try splitter.finish()
            Issue.record("accepted \(answer)")
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }

    @Test func nestingIsBounded() {
        let answer = Array(("{\"results\":[" + String(repeating: "[", count: 10_000)).utf8)
        var splitter = ResultsSplitter(limit: 1 << 20)
        #expect(throws: ResultsSplitter.FramingError.self) { _ = try splitter.elements(in: answer) }
    }
}

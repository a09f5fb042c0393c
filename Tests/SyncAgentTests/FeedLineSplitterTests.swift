@testable import SyncAgent
import Testing

/// The continuous feed's line splitter gives the same lines however the feed is cut into
/// chunks, drops heartbeats, and bounds the line it is waiting to finish.
struct FeedLineSplitterTests {
    /// Rows, heartbeats (bare and with spaces or CR), CRLF endings, and an unfinished last line.
    static let sample = Array(
        "{\"seq\":1,\"id\":\"a\"}\n\n\n  \n{\"seq\":2,\"id\":\"b\\n\"}\r\n\r\n \t\r\n{\"last_seq\":2}\n{\"seq\":3".utf8)

    static let expected = ["{\"seq\":1,\"id\":\"a\"}", "{\"seq\":2,\"id\":\"b\\n\"}\r", "{\"last_seq\":2}"]

    /// The lines the chunks give, as text, checking the bound after each chunk as the feed does.
    private func split(_ chunks: [ArraySlice<UInt8>], limit: Int = 1 << 20) throws -> [String] {
        var splitter = FeedLineSplitter(limit: limit)
        var lines: [String] = []
        for chunk in chunks {
            lines += splitter.lines(in: chunk).map { String(decoding: $0, as: UTF8.self) }
            try splitter.checkUnfinished()
        }
        return lines
    }

    @Test func theSampleWholeGivesItsCompleteNonBlankLines() throws {
        #expect(try split([Self.sample[...]]) == Self.expected)
    }

    @Test func everySplitPointGivesTheSameLines() throws {
        for point in 0...Self.sample.count {
            #expect(try split([Self.sample[..<point], Self.sample[point...]]) == Self.expected, "split at byte \(point)")
        }
        // One byte at a time: every CR, LF and line cut from its neighbours; and empty chunks between.
        #expect(try split(Self.sample.indices.map { Self.sample[$0...$0] }) == Self.expected)
        #expect(try split(Self.sample.indices.flatMap { [Self.sample[$0...$0], []] }) == Self.expected)
    }

    @Test func aLineIsGivenOnlyOnceItsNewlineArrives() {
        var splitter = FeedLineSplitter(limit: 100)
        #expect(splitter.lines(in: Array("{\"seq\":1,".utf8)).isEmpty)
        #expect(splitter.lines(in: Array("\"id\":\"a\"}".utf8)).isEmpty)
        #expect(splitter.lines(in: Array("\n{\"seq\"".utf8)).map(Array.init) == [Array("{\"seq\":1,\"id\":\"a\"}".utf8)])
        #expect(splitter.lines(in: Array(":2}\n".utf8)).map(Array.init) == [Array("{\"seq\":2}".utf8)])
    }

    @Test func heartbeatsGiveNoLines() throws {
        #expect(try split([Array("\n\n \n\r\n\t\n".utf8)[...]]).isEmpty)
        #expect(try split(Array(repeating: Array("\n".utf8)[...], count: 50)).isEmpty)
    }

    @Test func theUnfinishedLineIsBounded() throws {
        var splitter = FeedLineSplitter(limit: 9)
        _ = splitter.lines(in: Array("\n{\"seq\":".utf8))
        _ = splitter.lines(in: Array("12".utf8))
        try splitter.checkUnfinished() // 9 bytes: at the limit
        _ = splitter.lines(in: Array("3".utf8))
        #expect(throws: FeedLineSplitter.LineTooLong.self) { try splitter.checkUnfinished() }
        // A line that ends in time is never refused, however many chunks it came in.
        #expect(try split(Array("{\"seq\":1}\n{\"seq\":2}\n".utf8).map { [$0][...] }, limit: 9) == ["{\"seq\":1}", "{\"seq\":2}"])
    }

    @Test func theBoundCountsOnlyTheUnfinishedLine() throws {
        // Lines the chunk completes, and lines given before, are not held against the bound.
        var splitter = FeedLineSplitter(limit: 4)
        for _ in 0..<100 {
            #expect(splitter.lines(in: Array("{}\n{}\n{}\n{".utf8)).count == 3)
            try splitter.checkUnfinished()
            #expect(splitter.lines(in: Array("}\n".utf8)).count == 1)
            try splitter.checkUnfinished()
        }
    }
}

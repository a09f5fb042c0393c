/// Splits a continuous `_changes` feed into its lines as its chunks arrive: each chunk
/// gives the lines it completes, and the unfinished rest waits for the next chunk.
///
/// A line is the bytes before its `"\n"` (a `"\r"` before it stays: JSON reads it as
/// whitespace). Lines of nothing but whitespace, the feed's heartbeats, are dropped.
/// Only a new chunk is searched for `"\n"`, so a long line arriving in many chunks is
/// read once. The unfinished line is bounded: ``checkUnfinished()`` throws once it holds
/// more than `limit` bytes, so a feed that never ends its line cannot fill the memory.
///
/// ```swift
/// var splitter = FeedLineSplitter(limit: 16 << 20)
/// for try await chunk in response.body {
///     for line in splitter.lines(in: chunk.readableBytesView) { handle(try JSON(parsing: line)) }
///     try splitter.checkUnfinished()
/// }
/// ```
struct FeedLineSplitter {
    /// The unfinished line holds more than the limit's bytes.
    struct LineTooLong: Error, CustomStringConvertible {
        /// The most bytes an unfinished line may hold.
        let limit: Int

        /// What is wrong, for logs and errors.
        var description: String { "a line over \(limit) bytes" }
    }

    private let limit: Int
    /// The bytes received and not yet dropped: lines already returned, then the unfinished line.
    private var pending: [UInt8] = []
    /// How many bytes at the front of `pending` belong to lines already returned. They are
    /// dropped by the next call, once the caller is done with the slices it was given.
    private var consumed = 0

    /// A splitter whose unfinished line may hold up to `limit` bytes.
    init(limit: Int) {
        self.limit = limit
    }

    /// The non-blank lines that `chunk`, the next bytes of the feed, completes, in order and
    /// without their `"\n"`. The slices are valid until the next call.
    mutating func lines<Bytes: Collection<UInt8>>(in chunk: Bytes) -> [ArraySlice<UInt8>] {
        pending.removeFirst(consumed)
        consumed = 0
        // Bytes before the new chunk hold no newline: only the chunk is searched.
        var searchStart = pending.count
        pending.append(contentsOf: chunk)
        var found: [ArraySlice<UInt8>] = []
        while let newline = pending[searchStart...].firstIndex(of: UInt8(ascii: "\n")) {
            let line = pending[consumed..<newline]
            consumed = newline + 1
            searchStart = consumed
            if line.contains(where: { $0 > 0x20 }) { found.append(line) }
        }
        return found
    }

    /// Throws if the unfinished line holds more than the limit: call after each chunk's lines.
    func checkUnfinished() throws(LineTooLong) {
        guard pending.count - consumed <= limit else { throw LineTooLong(limit: limit) }
    }
}

/// libFuzzer entry: the input's first byte picks the line bound (0 to 191 bytes, or none),
/// its second how the rest, a continuous feed, is cut into chunks (see `chunks(of:seed:)`).
/// The feed is read whole, in those chunks and a byte at a time, checking the bound after
/// each chunk as `readContinuousFeed` does, and each reading is checked against a plain
/// split on "\n": it gives exactly the non-blank complete lines, or fails only when a line
/// passes the bound, having given a prefix of them. (Whole and chunked readings may differ
/// in failing: the bound is on the line held between chunks, not on a line a chunk completes.)
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFeedLineSplitter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let limit = data[0] < 192 ? Int(data[0]) : Int.max
    let feed = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))[...]
    let pieces = feed.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    let expected = pieces.dropLast().filter { $0.contains(where: { $0 > 0x20 }) }.map(Array.init)
    let longest = pieces.map(\.count).max() ?? 0
    let tail = pieces.last?.count ?? 0
    let readings = [
        ("whole", read([feed], limit: limit)),
        ("chunked", read(chunks(of: feed, seed: data[1]), limit: limit)),
        ("bytewise", read(feed.indices.map { feed[$0...$0] }, limit: limit)),
    ]
    for (name, (lines, failed)) in readings {
        guard failed ? lines.count <= expected.count && Array(expected.prefix(lines.count)) == lines : lines == expected else {
            fatalError("\(name): \(lines.count) lines, failed \(failed), against \(expected.count) expected")
        }
        guard !failed || longest > limit else { fatalError("\(name): refused a feed whose lines are within \(limit) bytes") }
        guard failed || tail <= limit else { fatalError("\(name): held an unfinished line over \(limit) bytes") }
    }
    guard readings[2].1.failed == (longest > limit) else { fatalError("bytewise: failed \(readings[2].1.failed), longest line \(longest)") }
    return 0
}

/// The lines a splitter gives for `chunks`, and whether its bound refused the feed.
private func read(_ chunks: [ArraySlice<UInt8>], limit: Int) -> (lines: [[UInt8]], failed: Bool) {
    var splitter = FeedLineSplitter(limit: limit)
    var lines: [[UInt8]] = []
    for chunk in chunks {
        lines += splitter.lines(in: chunk).map(Array.init)
        do { try splitter.checkUnfinished() } catch { return (lines, true) }
    }
    return (lines, false)
}

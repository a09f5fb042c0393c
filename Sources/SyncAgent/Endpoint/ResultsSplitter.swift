import JSON

/// Splits a `_bulk_get` answer, `{"results": [element, ...]}`, into the bytes of each
/// element of `results` as the answer arrives, so that one element at a time is parsed
/// and held, however long the answer is.
///
/// The elements' bytes are left to the JSON parser; the framing around them is checked
/// here: an answer that is not one object, a `results` that is not an array, mismatched
/// brackets, an element (or the bytes between elements) over `limit`, or an answer cut
/// short is a ``FramingError``, never a crash or a wait for ever.
///
/// ```swift
/// var splitter = ResultsSplitter(limit: 64 << 20)
/// for try await chunk in response.body {
///     for element in try splitter.elements(in: chunk.readableBytesView) {
///         let result = try JSON(parsing: element)
///     }
/// }
/// try splitter.finish()
/// ```
struct ResultsSplitter {
    /// Why the answer is not a well-framed `{"results": [...]}`.
    struct FramingError: Error, CustomStringConvertible {
        /// What is wrong, and at which byte of the answer.
        let description: String
        /// Whether the answer is well framed so far but one element is over the limit.
        var isOversized = false
    }

    private enum Place {
        /// Nothing but whitespace read yet.
        case beforeAnswer
        /// In the answer object: a key (or its end) comes next.
        case key
        /// Reading a key of the answer object.
        case inKey
        /// After a key: its colon comes next.
        case colon
        /// After the colon: the member's value comes next.
        case value
        /// Inside a member's value other than `results`, which is skipped.
        case skipping
        /// Inside a number or literal value of the answer object.
        case scalar
        /// After a member: a comma or the end of the answer comes next.
        case afterValue
        /// In `results`, between elements.
        case results
        /// Inside an element of `results`.
        case element
        /// After the answer: only whitespace may follow.
        case afterAnswer
    }

    private let limit: Int
    private var place = Place.beforeAnswer
    /// The open brackets, `{` or `[`, outermost first.
    private var open: [UInt8] = []
    private var inString = false
    private var escaped = false
    /// The first bytes of the key being read: enough to tell `results` from the rest.
    private var key: [UInt8] = []
    private var keyIsResults = false
    private var sawResults = false
    /// Whether a comma came since the last element (`[1,]` is an error, `[]` is not).
    private var afterComma = false
    private var element: [UInt8] = []
    /// Bytes read so far, and how many of them were in elements.
    private var offset = 0
    private var elementBytes = 0

    /// A splitter refusing an element, or bytes between elements, of more than `limit` bytes.
    init(limit: Int) {
        self.limit = limit
    }

    /// The elements of `results` that `chunk`, the next bytes of the answer, completes.
    mutating func elements<Bytes: Collection<UInt8>>(in chunk: Bytes) throws(FramingError) -> [[UInt8]] {
        var found: [[UInt8]] = []
        let scanned = chunk.withContiguousStorageIfAvailable { bytes in
            Result { () throws(FramingError) in try scan(bytes, into: &found) }
        }
        if let scanned {
            try scanned.get()
        } else {
            let bytes = Array(chunk)
            try bytes.withUnsafeBufferPointer { bytes in
                Result { () throws(FramingError) in try scan(bytes, into: &found) }
            }.get()
        }
        return found
    }

    /// Checks that the answer is complete: call once the body has ended.
    func finish() throws(FramingError) {
        guard place == .afterAnswer else {
            throw FramingError(description: inString ? "the answer ended inside a string" : "the answer ended early")
        }
    }

    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")

    private mutating func scan(_ bytes: UnsafeBufferPointer<UInt8>, into found: inout [[UInt8]]) throws(FramingError) {
        var elementStart: Int? = place == .element ? 0 : nil
        var index = 0
        defer { offset += bytes.count }
        while index < bytes.count {
            if inString {
                if escaped {
                    escaped = false
                    if place == .inKey && key.count < 8 { key.append(bytes[index]) }
                    index += 1
                    continue
                }
                var end = index
                while end < bytes.count, bytes[end] != Self.quote, bytes[end] != Self.backslash { end += 1 }
                if place == .inKey && key.count < 8 { key.append(contentsOf: bytes[index..<min(end, index + 8 - key.count)]) }
                index = end
                guard index < bytes.count else { break }
                if bytes[index] == Self.backslash {
                    escaped = true
                    if place == .inKey && key.count < 8 { key.append(Self.backslash) }
                } else {
                    inString = false
                    if place == .inKey {
                        keyIsResults = key.elementsEqual("results".utf8)
                        place = .colon
                    } else if place == .skipping && open.count == 1 {
                        place = .afterValue
                    }
                }
                index += 1
                continue
            }
            let byte = bytes[index]
            let isSpace = byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
            switch place {
            case .beforeAnswer, .afterAnswer:
                guard !isSpace else { break }
                guard place == .beforeAnswer, byte == UInt8(ascii: "{") else {
                    throw error(place == .beforeAnswer ? "the answer is not a JSON object" : "bytes after the answer", at: index)
                }
                try push(byte, at: index)
                place = .key
            case .key:
                guard !isSpace else { break }
                if byte == Self.quote {
                    inString = true
                    key.removeAll(keepingCapacity: true)
                    place = .inKey
                } else if byte == UInt8(ascii: "}") && open.count == 1 && !afterComma {
                    try endAnswer(at: index)
                } else {
                    throw error("a key of the answer was expected", at: index)
                }
            case .inKey:
                break // Strings are read above.
            case .colon:
                guard !isSpace else { break }
                guard byte == UInt8(ascii: ":") else { throw error("a colon was expected", at: index) }
                place = .value
            case .value:
                guard !isSpace else { break }
                afterComma = false
                if keyIsResults {
                    guard !sawResults else { throw error("results appears twice", at: index) }
                    guard byte == UInt8(ascii: "[") else { throw error("results is not an array", at: index) }
                    sawResults = true
                    try push(byte, at: index)
                    place = .results
                } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                    try push(byte, at: index)
                    place = .skipping
                } else if byte == Self.quote {
                    inString = true
                    place = .skipping
                } else if Self.isStructural(byte) {
                    throw error("a member without a value", at: index)
                } else {
                    place = .scalar
                }
            case .scalar:
                if isSpace {
                    place = .afterValue
                } else if byte == UInt8(ascii: ",") {
                    afterComma = true
                    place = .key
                } else if byte == UInt8(ascii: "}") {
                    try endAnswer(at: index)
                } else if Self.isStructural(byte) || byte == Self.quote {
                    throw error("a malformed value", at: index)
                }
            case .skipping:
                if byte == Self.quote {
                    inString = true
                } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                    try push(byte, at: index)
                } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                    try pop(byte, at: index)
                    if open.count == 1 { place = .afterValue }
                }
            case .afterValue:
                guard !isSpace else { break }
                if byte == UInt8(ascii: ",") {
                    afterComma = true
                    place = .key
                } else if byte == UInt8(ascii: "}") {
                    try endAnswer(at: index)
                } else {
                    throw error("a comma or the end of the answer was expected", at: index)
                }
            case .results:
                guard !isSpace else { break }
                if byte == UInt8(ascii: "]") && !afterComma {
                    try pop(byte, at: index)
                    place = .afterValue
                } else if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]") {
                    throw error("an empty element in results", at: index)
                } else {
                    place = .element
                    elementStart = index
                    continue // The byte is the element's first: read it as such.
                }
            case .element:
                if byte == Self.quote {
                    inString = true
                } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                    try push(byte, at: index)
                } else if open.count == 2 && (byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]")) {
                    try take(bytes, from: elementStart ?? 0, to: index)
                    found.append(element)
                    element = []
                    elementStart = nil
                    afterComma = byte == UInt8(ascii: ",")
                    if afterComma {
                        place = .results
                    } else {
                        try pop(byte, at: index)
                        place = .afterValue
                    }
                } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                    try pop(byte, at: index)
                }
            }
            index += 1
        }
        if place == .element { try take(bytes, from: elementStart ?? 0, to: bytes.count) }
        guard offset + bytes.count - elementBytes <= limit else {
            throw error("more than \(limit) bytes between the elements of results", at: bytes.count)
        }
    }

    /// Adds `bytes[start..<end]` to the element being read, within the limit.
    private mutating func take(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) throws(FramingError) {
        guard element.count + (end - start) <= limit else {
            var oversized = error("an element of results is over \(limit) bytes", at: end)
            oversized.isOversized = true
            throw oversized
        }
        element.append(contentsOf: bytes[start..<end])
        elementBytes += end - start
    }

    private mutating func push(_ bracket: UInt8, at index: Int) throws(FramingError) {
        guard open.count < JSON.maximumDepth else { throw error("nested too deeply", at: index) }
        open.append(bracket)
    }

    private mutating func pop(_ bracket: UInt8, at index: Int) throws(FramingError) {
        let opening = bracket == UInt8(ascii: "}") ? UInt8(ascii: "{") : UInt8(ascii: "[")
        guard open.last == opening else { throw error("a mismatched \(Character(Unicode.Scalar(bracket)))", at: index) }
        open.removeLast()
    }

    private mutating func endAnswer(at index: Int) throws(FramingError) {
        guard sawResults else { throw error("the answer has no results", at: index) }
        try pop(UInt8(ascii: "}"), at: index)
        place = .afterAnswer
    }

    private static func isStructural(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "{") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "[")
            || byte == UInt8(ascii: "]") || byte == UInt8(ascii: ",") || byte == UInt8(ascii: ":")
    }

    private func error(_ what: String, at index: Int) -> FramingError {
        FramingError(description: "\(what) at byte \(offset + index)")
    }
}

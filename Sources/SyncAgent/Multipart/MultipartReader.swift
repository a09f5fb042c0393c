import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import NIOCore

/// Reads a MIME multipart body (`multipart/related`, `multipart/mixed`) part
/// by part as it arrives, so a part of any size can be passed on in chunks
/// without being held whole in memory.
///
/// ```swift
/// let reader = MultipartReader(boundary: boundary, body: request.body)
/// while let headers = try await reader.nextPart() {
///     if headers.contentType == "application/json" {
///         let json = try await reader.readBody(limit: 8 << 20)
///     } else {
///         let staged = try await db.stageAttachment(reader.bodyChunks(), limit: maxSize)
///     }
/// }
/// ```
///
/// A reader belongs to one task at a time.
final class MultipartReader<Body: AsyncSequence> where Body.Element: MultipartBytes {
    private var source: Body.AsyncIterator
    private var buffer: [UInt8] = []
    private var start = 0
    private var sourceEnded = false
    /// `CRLF--boundary`: what ends a part's body.
    private let delimiter: [UInt8]
    private var state = State.preamble
    private let maximumHeaderSize = 16 << 10
    /// The most parts read before ``MultipartError/tooManyParts``.
    private let maximumParts: Int
    private var parts = 0

    private enum State {
        case preamble, headers, body, epilogue
    }

    /// A reader of `body`, whose parts are separated by `boundary` (the
    /// `boundary` parameter of the `Content-Type`, without quotes), refusing
    /// more than `maximumParts` parts.
    init(boundary: String, body: Body, maximumParts: Int = 10_000) {
        self.source = body.makeAsyncIterator()
        self.maximumParts = maximumParts
        self.delimiter = Array("\r\n--\(boundary)".utf8)
        // The first boundary may start the body without a preceding CRLF.
        self.buffer = [0x0D, 0x0A]
    }

    /// Moves to the next part and returns its headers; `nil` after the last part.
    /// Any unread body of the current part is skipped.
    func nextPart() async throws -> MultipartHeaders? {
        switch state {
        case .epilogue: return nil
        case .body:
            while try await nextChunk() != nil {}
        case .preamble:
            guard try await skipPastDelimiter() else { throw MultipartError.malformed("no opening boundary") }
        case .headers: break
        }
        guard state == .headers else { return nil }
        // After a delimiter: `--` ends the body; otherwise optional padding and CRLF.
        try await fill(2)
        if buffer[start] == UInt8(ascii: "-"), buffer[start + 1] == UInt8(ascii: "-") {
            state = .epilogue
            return nil
        }
        parts += 1
        guard parts <= maximumParts else { throw MultipartError.tooManyParts(maximumParts) }
        let lineEnd = try await find([0x0D, 0x0A], limit: 1024)
        start = lineEnd + 2
        let headerEnd: Int
        if try await hasPrefix([0x0D, 0x0A]) {
            headerEnd = start
        } else {
            headerEnd = try await find([0x0D, 0x0A, 0x0D, 0x0A], limit: maximumHeaderSize) + 2
        }
        let headers = MultipartHeaders(parsing: buffer[start..<headerEnd])
        start = headerEnd + 2
        state = .body
        return headers
    }

    /// The next chunk of the current part's body, of at least ``chunkSize`` bytes
    /// unless the part ends first; `nil` at its end.
    func nextChunk() async throws -> ArraySlice<UInt8>? {
        guard state == .body else { return nil }
        // Bytes after `start` already searched for the delimiter, so each is searched once.
        var searched = 0
        while true {
            if let found = firstIndex(of: delimiter, from: start + searched) {
                let chunk = buffer[start..<found]
                start = found + delimiter.count
                state = .headers
                return chunk.isEmpty ? nil : chunk
            }
            // Everything but a possible partial delimiter at the end can go out.
            let safeEnd = max(start, buffer.count - (delimiter.count - 1))
            if safeEnd - start >= Self.chunkSize || (sourceEnded && safeEnd > start) {
                let chunk = buffer[start..<safeEnd]
                start = safeEnd
                return chunk
            }
            searched = safeEnd - start
            guard try await readMore() else { throw MultipartError.malformed("body ended inside a part") }
        }
    }

    /// The least a body chunk holds before it goes out.
    static var chunkSize: Int { 64 << 10 }

    /// The rest of the current part's body, refusing more than `limit` bytes.
    func readBody(limit: Int) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        while let chunk = try await nextChunk() {
            guard bytes.count + chunk.count <= limit else { throw MultipartError.tooLarge }
            bytes.append(contentsOf: chunk)
        }
        return bytes
    }

    /// The rest of the current part's body as an async sequence of chunks.
    func bodyChunks() -> MultipartBodyChunks<Body> { MultipartBodyChunks(reader: self) }

    // MARK: Buffer

    private func skipPastDelimiter() async throws -> Bool {
        while true {
            if let found = firstIndex(of: delimiter, from: start) {
                start = found + delimiter.count
                state = .headers
                return true
            }
            start = max(start, buffer.count - (delimiter.count - 1))
            guard try await readMore() else { return false }
        }
    }

    private func hasPrefix(_ bytes: [UInt8]) async throws -> Bool {
        try await fill(bytes.count)
        return buffer[start..<(start + bytes.count)].elementsEqual(bytes)
    }

    /// Ensures `count` unread bytes are buffered.
    private func fill(_ count: Int) async throws {
        while buffer.count - start < count {
            guard try await readMore() else { throw MultipartError.malformed("body ended early") }
        }
    }

    /// The index of `pattern` at or after `start`, reading more as needed.
    private func find(_ pattern: [UInt8], limit: Int) async throws -> Int {
        while true {
            if let found = firstIndex(of: pattern, from: start) { return found }
            guard buffer.count - start <= limit else { throw MultipartError.malformed("part headers too long") }
            guard try await readMore() else { throw MultipartError.malformed("body ended inside part headers") }
        }
    }

    private func readMore() async throws -> Bool {
        guard !sourceEnded, let chunk = try await source.next() else {
            sourceEnded = true
            return false
        }
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        chunk.append(to: &buffer)
        return true
    }

    private func firstIndex(of pattern: [UInt8], from offset: Int) -> Int? {
        guard let first = pattern.first, buffer.count - offset >= pattern.count else { return nil }
        return buffer.withUnsafeBufferPointer { bytes -> Int? in
            var index = offset
            let last = bytes.count - pattern.count
            while index <= last {
                guard let raw = memchr(bytes.baseAddress! + index, Int32(first), last - index + 1) else { return nil }
                let found = bytes.baseAddress!.distance(to: raw.assumingMemoryBound(to: UInt8.self))
                if memcmp(bytes.baseAddress! + found, pattern, pattern.count) == 0 { return found }
                index = found + 1
            }
            return nil
        }
    }
}

/// The body of one part as chunks; see ``MultipartReader/bodyChunks()``.
struct MultipartBodyChunks<Body: AsyncSequence>: AsyncSequence where Body.Element: MultipartBytes {
    typealias Element = ArraySlice<UInt8>
    let reader: MultipartReader<Body>

    func makeAsyncIterator() -> Iterator { Iterator(reader: reader) }

    /// Reads the next chunk from the reader.
    struct Iterator: AsyncIteratorProtocol {
        let reader: MultipartReader<Body>
        mutating func next() async throws -> ArraySlice<UInt8>? { try await reader.nextChunk() }
    }
}

/// Bytes a ``MultipartReader`` reads: NIO's buffers of a request or response
/// body, or the chunks of an enclosing reader's part (a document's
/// `multipart/related` inside a `multipart/mixed` answer), taken as they are.
protocol MultipartBytes {
    /// Appends these bytes to `buffer`.
    func append(to buffer: inout [UInt8])
}

extension ByteBuffer: MultipartBytes {
    func append(to buffer: inout [UInt8]) { buffer.append(contentsOf: readableBytesView) }
}

extension ArraySlice: MultipartBytes where Element == UInt8 {
    func append(to buffer: inout [UInt8]) { buffer.append(contentsOf: self) }
}

/// Why a multipart body could not be read.
enum MultipartError: Error, CustomStringConvertible {
    /// The body does not follow the multipart format.
    case malformed(String)
    /// A part is larger than allowed.
    case tooLarge
    /// The body has more parts than allowed.
    case tooManyParts(Int)
    /// A document's JSON is larger than the document bound.
    case documentTooLarge(Int)

    var description: String {
        switch self {
        case .malformed(let why): "malformed multipart body: \(why)"
        case .tooLarge: "multipart part too large"
        case .tooManyParts(let maximum): "multipart body has more than \(maximum) parts"
        case .documentTooLarge(let limit): "a document is larger than \(limit) bytes"
        }
    }
}

import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import Store

/// Writes MIME multipart bodies as CouchDB sends them: parts separated by
/// `--boundary` lines, each with its headers, and `--boundary--` at the end.
///
/// A body is a list of ``MultipartSegment``s: bytes, and files that are read
/// in chunks only when the body is written, so large attachments are never
/// held in memory.
struct MultipartWriter: Sendable {
    /// The boundary string (without the leading dashes).
    let boundary: String
    private var partCount = 0
    /// The body written so far.
    private(set) var segments: [MultipartSegment] = []

    /// A writer with a fresh random boundary.
    init(boundary: String = MultipartWriter.randomBoundary()) {
        self.boundary = boundary
    }

    /// 32 random hex digits.
    static func randomBoundary() -> String {
        Hex.string((0..<16).map { _ in UInt8.random(in: 0...255) })
    }

    /// The `Content-Type` value for this body, e.g. `multipart/related; boundary="…"`.
    func contentType(_ subtype: String) -> String { "multipart/\(subtype); boundary=\"\(boundary)\"" }

    /// Starts a part with `headers`; its body follows with ``append(_:)``.
    mutating func startPart(_ headers: [(name: String, value: String)]) {
        var text = partCount == 0 ? "--\(boundary)\r\n" : "\r\n--\(boundary)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        segments.append(.bytes(Array(text.utf8)))
        partCount += 1
    }

    /// Appends body content of the current part.
    mutating func append(_ segment: MultipartSegment) { segments.append(segment) }

    /// Appends the segments of a nested multipart body.
    mutating func append(contentsOf nested: [MultipartSegment]) { segments.append(contentsOf: nested) }

    /// The segments written since the last call, for a body sent as it is written.
    mutating func takeSegments() -> [MultipartSegment] {
        defer { segments.removeAll() }
        return segments
    }

    /// Closes the body and returns its segments.
    mutating func finish() -> [MultipartSegment] {
        segments.append(.bytes(Array("\r\n--\(boundary)--".utf8)))
        return segments
    }

    /// A document with attachments as `multipart/related`: the JSON first
    /// (attachments marked `"follows": true`), then one part per attachment,
    /// in the order they appear in `_attachments`; a part holding encoded
    /// bytes says so with `Content-Encoding`, as CouchDB's do.
    static func related(document: [UInt8],
                        attachments: [(name: String, contentType: String, path: String, length: Int, encoding: String?)],
                        boundary: String = randomBoundary()) -> (contentType: String, segments: [MultipartSegment]) {
        var writer = MultipartWriter(boundary: boundary)
        writer.startPart([("Content-Type", "application/json")])
        writer.append(.bytes(document))
        for attachment in attachments {
            var headers = [
                ("Content-Disposition", "attachment; filename=\"\(escaped(attachment.name))\""),
                ("Content-Type", attachment.contentType),
                ("Content-Length", String(attachment.length)),
            ]
            if let encoding = attachment.encoding { headers.append(("Content-Encoding", encoding)) }
            writer.startPart(headers)
            writer.append(.file(path: attachment.path, length: attachment.length))
        }
        return (writer.contentType("related"), writer.finish())
    }

    private static func escaped(_ name: String) -> String {
        name.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
    }
}

/// A piece of a multipart body.
enum MultipartSegment: Sendable {
    /// Bytes written as they are.
    case bytes([UInt8])
    /// `length` bytes of a file from byte `offset` on, read when written.
    case file(path: String, offset: Int = 0, length: Int)

    /// The segment's size in bytes.
    var length: Int {
        switch self {
        case .bytes(let bytes): bytes.count
        case .file(_, _, let length): length
        }
    }

    /// The total size of `segments`, for a `Content-Length`.
    static func length(of segments: [MultipartSegment]) -> Int { segments.reduce(0) { $0 + $1.length } }

    /// Writes `segments` to `sink` in order, files in chunks of `chunkSize` bytes,
    /// each read straight into the buffer that is sent.
    static func write(_ segments: [MultipartSegment], chunkSize: Int = 64 << 10,
                      to sink: (ByteBuffer) async throws -> Void) async throws {
        let allocator = ByteBufferAllocator()
        var pending = allocator.buffer(capacity: chunkSize)
        for segment in segments {
            switch segment {
            case .bytes(let bytes):
                pending.writeBytes(bytes)
            case .file(let path, let offset, let length):
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw MultipartError.malformed("cannot read \(path)") }
                defer { close(descriptor) }
                var position = offset
                let end = offset + length
                while position < end {
                    let wanted = min(max(chunkSize - pending.readableBytes, 4096), end - position)
                    var failed = false
                    let count = pending.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { free in
                        let read = pread(descriptor, free.baseAddress!, wanted, off_t(position))
                        failed = read < 0
                        return max(read, 0)
                    }
                    if failed && errno == EINTR { continue }
                    guard !failed else { throw MultipartError.malformed("cannot read \(path)") }
                    guard count > 0 else { throw MultipartError.malformed("\(path) is shorter than \(length) bytes") }
                    position += count
                    if pending.readableBytes >= chunkSize {
                        try await sink(pending)
                        pending = allocator.buffer(capacity: chunkSize)
                    }
                }
            }
        }
        if pending.readableBytes > 0 { try await sink(pending) }
    }
}

/// Multipart segments as a request body: bytes as they are, files read in
/// chunks of 64 KiB only as the body is sent.
struct MultipartSegmentChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let segments: [MultipartSegment]

    func makeAsyncIterator() -> Iterator { Iterator(segments: segments) }

    /// Reads the next chunk when the client asks for it.
    struct Iterator: AsyncIteratorProtocol {
        let segments: [MultipartSegment]
        var index = 0
        var file: FileChunks.Iterator?

        mutating func next() async throws -> ByteBuffer? {
            while true {
                if var reading = file {
                    let chunk = try await reading.next()
                    file = reading
                    if let chunk { return ByteBuffer(bytes: chunk) }
                    file = nil
                }
                guard index < segments.count else { return nil }
                let segment = segments[index]
                index += 1
                switch segment {
                case .bytes(let bytes): return ByteBuffer(bytes: bytes)
                case .file(let path, let offset, let length):
                    file = FileChunks(path: path, offset: offset, length: length).makeAsyncIterator()
                }
            }
        }
    }
}

import CZlib
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Reads a gzip file's decompressed content in pieces, with zlib: how the
/// store reads back attachments kept gzip-encoded, as CouchDB keeps
/// compressible ones. The content must decode to exactly the length the
/// attachment declares; anything else is an error, never short content.
public final class AttachmentContentReader {
    private let descriptor: Int32
    private let path: String
    /// Bytes read from memory instead of a file, and how many have been read.
    private var memory: [UInt8]?
    private var memoryOffset = 0
    private let length: Int
    private let gzip: Bool
    private let stream: UnsafeMutablePointer<z_stream>
    private let input: UnsafeMutablePointer<UInt8>
    private let output: UnsafeMutablePointer<UInt8>
    private static let bufferSize = 64 << 10
    private var delivered = 0
    private var endOfFile = false
    private var memberEnded = false

    /// The content of `gzip` bytes, which must decode to exactly `length` bytes:
    /// an attachment a CouchDB server sends gzip-encoded in a multipart answer.
    public static func decodeGzip(_ gzip: [UInt8], length: Int) throws(StoreError) -> [UInt8] {
        try AttachmentContentReader(memory: gzip, length: length).readAll()
    }

    private convenience init(memory: [UInt8], length: Int) throws(StoreError) {
        try self.init(path: nil, length: length, gzip: true)
        self.memory = memory
    }

    /// A reader of the file at `path` (or, with `nil`, of bytes given afterwards), decoded
    /// from gzip when `gzip`, which must hold `length` content bytes.
    init(path: String?, length: Int, gzip: Bool) throws(StoreError) {
        if let path {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw .internal("cannot read attachment file \(path)") }
        } else {
            descriptor = -1
        }
        self.path = path ?? "gzip content"
        self.length = length
        self.gzip = gzip
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        input = .allocate(capacity: Self.bufferSize)
        output = .allocate(capacity: Self.bufferSize)
        if gzip, czlib_inflate_init_gzip(stream) != Z_OK {
            if descriptor >= 0 { close(descriptor) }
            stream.deallocate()
            input.deallocate()
            output.deallocate()
            throw .internal("cannot start a gzip decoder")
        }
    }

    deinit {
        if gzip { inflateEnd(stream) }
        if descriptor >= 0 { close(descriptor) }
        stream.deallocate()
        input.deallocate()
        output.deallocate()
    }

    /// The next piece of content (at most 64 KiB), or `nil` after the last.
    public func next() throws(StoreError) -> [UInt8]? {
        gzip ? try nextDecoded() : try nextPlain()
    }

    /// The whole content.
    public func readAll() throws(StoreError) -> [UInt8] {
        var content: [UInt8] = []
        content.reserveCapacity(length)
        while let piece = try next() { content.append(contentsOf: piece) }
        return content
    }

    private func nextPlain() throws(StoreError) -> [UInt8]? {
        guard delivered < length else { return nil }
        let count = try fill(input, upTo: min(Self.bufferSize, length - delivered))
        guard count > 0 else { throw .internal("attachment file \(path) is shorter than \(length) bytes") }
        delivered += count
        return Array(UnsafeBufferPointer(start: input, count: count))
    }

    private func nextDecoded() throws(StoreError) -> [UInt8]? {
        while true {
            if stream.pointee.avail_in == 0, !endOfFile {
                let count = try fill(input, upTo: Self.bufferSize)
                if count == 0 { endOfFile = true }
                stream.pointee.next_in = input
                stream.pointee.avail_in = UInt32(count)
            }
            if stream.pointee.avail_in == 0, endOfFile {
                guard memberEnded, delivered == length else { throw notGzip }
                return nil
            }
            if memberEnded {
                // Another gzip member follows the one that ended.
                guard inflateReset(stream) == Z_OK else { throw notGzip }
                memberEnded = false
            }
            stream.pointee.next_out = output
            stream.pointee.avail_out = UInt32(Self.bufferSize)
            let status = inflate(stream, Z_NO_FLUSH)
            let produced = Self.bufferSize - Int(stream.pointee.avail_out)
            switch status {
            case Z_STREAM_END: memberEnded = true
            case Z_OK, Z_BUF_ERROR: break
            default: throw notGzip
            }
            delivered += produced
            guard delivered <= length else { throw notGzip }
            if produced > 0 { return Array(UnsafeBufferPointer(start: output, count: produced)) }
        }
    }

    private var notGzip: StoreError {
        .badRequest("gzip-encoded attachment content is not the gzip of \(length) bytes")
    }

    /// Reads up to `count` bytes from the file (or memory); 0 at its end.
    private func fill(_ buffer: UnsafeMutablePointer<UInt8>, upTo count: Int) throws(StoreError) -> Int {
        if let memory {
            let taken = min(count, memory.count - memoryOffset)
            guard taken > 0 else { return 0 }
            memory.withUnsafeBufferPointer { source in
                buffer.update(from: source.baseAddress! + memoryOffset, count: taken)
            }
            memoryOffset += taken
            return taken
        }
        while true {
            let result = read(descriptor, buffer, count)
            if result >= 0 { return result }
            if errno != EINTR { throw .internal("cannot read attachment file \(path): \(String(cString: strerror(errno)))") }
        }
    }
}

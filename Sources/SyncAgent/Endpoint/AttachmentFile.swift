import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Store

/// Attachment content that travels beside a revision's JSON as a file, never
/// as bytes in memory: how the replicator carries attachments of any size.
/// The revision's JSON marks the attachment `"follows": true` and says, as
/// CouchDB does, whether the file's bytes are `gzip`-encoded.
///
/// The file stays (pinned in its store, or in a spool) while any copy of the
/// value exists, and is let go when the last copy is dropped: a replication
/// that fails part-way leaves nothing staged behind.
public struct AttachmentFile: Sendable, Hashable {
    /// The file's path.
    public var path: String { holder.path }
    /// How many bytes the file holds (the encoded length, for encoded content).
    public var length: Int { holder.staged.length }
    /// CouchDB's `md5-` digest of the file's bytes.
    public var digest: String { holder.staged.digest }
    /// The staging in its store.
    var staged: StagedAttachment { holder.staged }
    private let holder: Holder

    /// A file of `staged` content at `path`; `release` runs once, when the last copy is dropped.
    init(path: String, staged: StagedAttachment, release: @escaping @Sendable () -> Void) {
        holder = Holder(path: path, staged: staged, release: release)
    }

    public static func == (a: AttachmentFile, b: AttachmentFile) -> Bool { a.holder === b.holder }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(holder)) }

    /// The file's bytes in chunks of at most 64 KiB, read as they are asked for.
    func chunks() -> FileChunks { FileChunks(path: path, offset: 0, length: length) }

    private final class Holder: Sendable {
        let path: String
        let staged: StagedAttachment
        let release: @Sendable () -> Void

        init(path: String, staged: StagedAttachment, release: @escaping @Sendable () -> Void) {
            self.path = path
            self.staged = staged
            self.release = release
        }

        deinit { release() }
    }
}

/// Where attachment content read from a source is put until the target writes
/// it: a local target's own store (so writing it copies nothing), a spool of
/// files for a remote target, or inline in the JSON for answers known to be small.
public enum AttachmentStaging: Sendable {
    /// Staged in the database's attachment store.
    case database(Database)
    /// Staged in a folder of its own.
    case spool(AttachmentSpool)
    /// Kept in the revision's JSON as base64 `data`, as a JSON `_bulk_get` answer carries it.
    case inline

    /// Whether content stays in the JSON.
    var isInline: Bool { if case .inline = self { true } else { false } }

    /// Streams `chunks` to a file, failing past `limit` bytes; `nil` for ``inline``.
    func stage<Chunks: AsyncSequence>(_ chunks: Chunks, limit: Int) async throws -> AttachmentFile?
    where Chunks.Element: Collection<UInt8> {
        switch self {
        case .database(let database):
            let staged = try await database.stageAttachment(chunks, limit: limit)
            return AttachmentFile(path: database.stagedPath(staged), staged: staged) { database.discardStaged(staged) }
        case .spool(let spool):
            let staged = try await spool.stage(chunks, limit: limit)
            return AttachmentFile(path: spool.path(of: staged), staged: staged) { spool.discard(staged) }
        case .inline:
            return nil
        }
    }
}

/// A file's bytes as an async sequence of chunks of at most 64 KiB.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let path: String
    let offset: Int
    let length: Int

    func makeAsyncIterator() -> Iterator { Iterator(path: path, offset: offset, remaining: length) }

    /// Reads the next chunk when asked; a file shorter than `length` is an error.
    struct Iterator: AsyncIteratorProtocol {
        let path: String
        var offset: Int
        var remaining: Int
        /// The open file, closed when the iterator is done or dropped.
        private var file: OpenFile?

        init(path: String, offset: Int, remaining: Int) {
            self.path = path
            self.offset = offset
            self.remaining = remaining
        }

        mutating func next() async throws -> [UInt8]? {
            guard remaining > 0 else {
                file = nil
                return nil
            }
            if file == nil { file = try OpenFile(path) }
            let chunk = try file!.read(at: offset, count: Swift.min(64 << 10, remaining))
            guard !chunk.isEmpty else { throw FileReadError(path: path, reason: "it ends \(remaining) bytes early") }
            offset += chunk.count
            remaining -= chunk.count
            return chunk
        }
    }

    /// A descriptor open for reading, closed with its last reference.
    private final class OpenFile {
        let descriptor: Int32
        let path: String

        init(_ path: String) throws {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw FileReadError(path: path, code: errno) }
            self.path = path
        }

        /// Up to `count` bytes from `offset`; fewer only at the end of the file.
        func read(at offset: Int, count: Int) throws -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            var filled = 0
            while filled < count {
                let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + filled, count - filled, off_t(offset + filled)) }
                if read < 0 && errno == EINTR { continue }
                guard read >= 0 else { throw FileReadError(path: path, code: errno) }
                if read == 0 { break }
                filled += read
            }
            bytes.removeLast(count - filled)
            return bytes
        }

        deinit { close(descriptor) }
    }
}

/// Why an attachment's staged file could not be read while it was being sent.
struct FileReadError: Error, CustomStringConvertible {
    let path: String
    let reason: String

    init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    /// A failed system call's `errno`, in words.
    init(path: String, code: Int32) {
        self.init(path: path, reason: String(cString: strerror(code)))
    }

    var description: String { "cannot read the attachment file \(path): \(reason)" }
}

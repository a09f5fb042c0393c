import Crypto
import Foundation
import Locking

/// Attachment content written to its file and ready to be referenced by a
/// revision. Identical content is stored once.
public struct StagedAttachment: Sendable, Hashable {
    /// SHA-256 of the content, lower-case hex: the file's name.
    public let key: String
    /// CouchDB's `md5-<base64>` digest of the content.
    public let digest: String
    /// The content's length in bytes.
    public let length: Int
}

/// The folder of content-addressed attachment files beside a database.
///
/// Content is written to a temporary file while its digests are computed, then
/// renamed to its SHA-256, so a file under a digest name is always complete.
/// Files staged but not yet referenced by a committed revision are pinned, so
/// compaction does not take them.
final class AttachmentStore: Sendable {
    let folder: String
    private let pins = Locked<[String: Int]>([:])

    init(folder: String) throws(StoreError) {
        self.folder = folder
        do {
            for path in [folder, folder + "/tmp"] {  // the owner's only, like the database beside it
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
        } catch {
            throw .internal("cannot create \(folder): \(error)")
        }
    }

    /// The path of the file holding the content with SHA-256 `key`.
    func path(for key: String) -> String { folder + "/" + key }

    /// Writes `bytes` and returns its staged description.
    func stage(_ bytes: some Collection<UInt8>) throws(StoreError) -> StagedAttachment {
        let writer = try AttachmentWriter(store: self)
        try writer.append(bytes)
        return try writer.finish()
    }

    /// Writes every chunk of `chunks`, never holding more than one chunk in memory.
    func stage<Chunks: AsyncSequence>(_ chunks: Chunks, limit: Int) async throws -> StagedAttachment
    where Chunks.Element: Collection<UInt8> {
        let writer = try AttachmentWriter(store: self)
        var length = 0
        do {
            for try await chunk in chunks {
                length += chunk.count
                if length > limit { throw StoreError(.tooLarge, error: "attachment_too_large", reason: "Attachment exceeds \(limit) bytes") }
                try writer.append(chunk)
            }
        } catch {
            writer.abandon()
            throw error
        }
        return try writer.finish()
    }

    /// Reads a whole attachment.
    func read(_ key: String) throws(StoreError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path(for: key)) else {
            throw .internal("attachment file \(key) is missing")
        }
        return [UInt8](data)
    }

    func pin(_ key: String) { pins.withLock { $0[key, default: 0] += 1 } }

    func unpin(_ key: String) {
        pins.withLock { pins in
            if let count = pins[key], count > 1 { pins[key] = count - 1 } else { pins[key] = nil }
        }
    }

    /// Deletes every file whose key is neither in `referenced` nor pinned. Returns how many.
    func removeOrphans(keeping referenced: Set<String>) -> Int {
        let pinned = pins.withLock { Set($0.keys) }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var removed = 0
        for name in names where name.count == 64 && !referenced.contains(name) && !pinned.contains(name) {
            if unlink(path(for: name)) == 0 { removed += 1 }
        }
        return removed
    }

    /// The bytes taken by attachment files.
    func totalSize() -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.reduce(0) { sum, name in
            var info = stat()
            return sum + (stat(path(for: name), &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int(info.st_size) : 0)
        }
    }
}

/// Streams content into a temporary file, hashing as it goes.
final class AttachmentWriter {
    private let store: AttachmentStore
    private let temporaryPath: String
    private let descriptor: Int32
    private var md5 = Insecure.MD5()
    private var sha256 = SHA256()
    private var length = 0

    init(store: AttachmentStore) throws(StoreError) {
        self.store = store
        temporaryPath = store.folder + "/tmp/" + UUID().uuidString
        descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .internal("cannot create \(temporaryPath): \(String(cString: strerror(errno)))") }
    }

    func append(_ bytes: some Collection<UInt8>) throws(StoreError) {
        let result: Result<Void, StoreError>? = bytes.withContiguousStorageIfAvailable { buffer in
            let raw = UnsafeRawBufferPointer(buffer)
            md5.update(bufferPointer: raw)
            sha256.update(bufferPointer: raw)
            length += raw.count
            var offset = 0
            while offset < raw.count {
                let written = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return .failure(.internal("cannot write attachment: \(String(cString: strerror(errno)))"))
                }
                offset += written
            }
            return .success(())
        }
        if let result { try result.get() } else { try append(Array(bytes)) }
    }

    /// Moves the file to its content address (or drops it if that content is
    /// already stored) and pins it until the caller's write commits.
    func finish() throws(StoreError) -> StagedAttachment {
        close(descriptor)
        let key = sha256.finalize().map { String(format: "%02x", $0) }.joined()
        let digest = "md5-" + Data(md5.finalize()).base64EncodedString()
        store.pin(key)
        if rename(temporaryPath, store.path(for: key)) != 0 {
            unlink(temporaryPath)
            store.unpin(key)
            throw .internal("cannot store attachment: \(String(cString: strerror(errno)))")
        }
        return StagedAttachment(key: key, digest: digest, length: length)
    }

    func abandon() {
        close(descriptor)
        unlink(temporaryPath)
    }
}

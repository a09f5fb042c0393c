import FoundationEssentials
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// Attachment content written to its file and ready to be referenced by a
/// revision. Identical content is stored once.
public struct StagedAttachment: Sendable, Hashable {
    /// SHA-256 of the content, lower-case hex: the file's name.
    public let key: String
    /// CouchDB's `md5-<base64>` digest of the content.
    public let digest: String
    /// The content's length in bytes.
    public let length: Int
    /// This staging's own pin on the file, so releasing it twice is harmless.
    let pin: UUID
}

/// The folder of content-addressed attachment files beside a database.
///
/// Content is written to a temporary file in `tmp/` while its digests are
/// computed, made durable, then renamed to its SHA-256, so a file under a
/// digest name is always complete. Files staged but not yet referenced by a
/// committed revision are pinned, so compaction does not take them.
final class AttachmentStore: Sendable {
    let folder: String
    /// The pins held on each file: one per staging not yet released.
    private let pins = Locked<[String: Set<UUID>]>([:])

    /// Opens the folder (creating it) and removes temporary files that a
    /// crashed writer left behind.
    init(folder: String) throws(StoreError) {
        self.folder = folder
        do {
            for path in [folder, folder + "/tmp"] {  // the owner's only, like the database beside it
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
        } catch {
            throw .internal("cannot create \(folder): \(error)")
        }
        sweepTemporaryFiles()
    }

    /// The path of the file holding the content with SHA-256 `key`.
    func path(for key: String) -> String { folder + "/" + key }

    /// Writes `bytes` and returns its staged description.
    func stage(_ bytes: some Collection<UInt8>) throws(StoreError) -> StagedAttachment {
        let writer = try AttachmentWriter(store: self)
        try writer.write(Array(bytes))
        return try writer.finish()
    }

    /// Writes every chunk of `chunks`, never holding more than one chunk in memory.
    func stage<Chunks: AsyncSequence>(_ chunks: Chunks, limit: Int) async throws -> StagedAttachment
    where Chunks.Element: Collection<UInt8> {
        let writer = try AttachmentWriter(store: self)
        var length = 0
        for try await chunk in chunks {
            length += chunk.count
            if length > limit { throw StoreError(.tooLarge, error: "attachment_too_large", reason: "Attachment exceeds \(limit) bytes") }
            try await writer.append(chunk)
        }
        try await writer.writeRest()
        return try writer.finish()
    }

    /// Reads a whole attachment.
    func read(_ key: String) throws(StoreError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path(for: key)) else {
            throw .internal("attachment file \(key) is missing")
        }
        return [UInt8](data)
    }

    /// Pins the stored file of `attachment`, so compaction keeps it while a
    /// reader sends it; `nil` when the file is gone already.
    func pin(_ attachment: Attachment) -> StagedAttachment? {
        let staged = StagedAttachment(key: attachment.key, digest: attachment.digest, length: attachment.storedLength, pin: UUID())
        pin(staged)
        guard access(path(for: attachment.key), R_OK) == 0 else {
            release(staged)
            return nil
        }
        return staged
    }

    /// Releases `staged` and deletes its file when nothing else pins it: for a
    /// folder whose files no revision refers to (``AttachmentSpool``).
    func discard(_ staged: StagedAttachment) {
        release(staged)
        let deleted = pins.withLock { pins in pins[staged.key] == nil && unlink(path(for: staged.key)) == 0 }
        if deleted { syncFolder() }
    }

    /// Pins a file before it is moved into place.
    fileprivate func pin(_ staged: StagedAttachment) {
        pins.withLock { _ = $0[staged.key, default: []].insert(staged.pin) }
    }

    /// Releases one staging's pin; releasing it again does nothing.
    func release(_ staged: StagedAttachment) {
        pins.withLock { pins in
            guard var holders = pins[staged.key] else { return }
            holders.remove(staged.pin)
            pins[staged.key] = holders.isEmpty ? nil : holders
        }
    }

    /// Deletes every file whose key is neither in `referenced` nor pinned. Returns how many.
    ///
    /// Each file is checked and deleted under the pins' lock, and a writer pins
    /// before it renames, so a file staged at any moment is never deleted.
    func removeOrphans(keeping referenced: Set<String>) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var removed = 0
        for name in names where name.count == 64 && !referenced.contains(name) {
            let deleted = pins.withLock { pins in pins[name] == nil && unlink(path(for: name)) == 0 }
            if deleted { removed += 1 }
        }
        if removed > 0 { syncFolder() }
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

    /// Makes the folder's entries (a rename, a deletion) durable.
    @discardableResult
    func syncFolder() -> Bool {
        let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return fsync(descriptor) == 0
    }

    /// Deletes the temporary files no writer holds: a writer keeps an exclusive
    /// lock on its file until the rename, so another process's are left alone.
    private func sweepTemporaryFiles() {
        let temporary = folder + "/tmp/"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] {
            let descriptor = open(temporary + name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { unlink(temporary + name) }
            close(descriptor)
        }
    }
}

/// Streams content into a temporary file, hashing as it goes. A writer that
/// is dropped before ``finish()`` closes and removes its file.
///
/// Content is gathered into batches of ``batchSize`` bytes; each batch is
/// hashed by ``ContentDigests`` beside its write. Every ``writebackInterval``
/// bytes the kernel is asked to start writing the range to disk, so the fsync
/// in ``finish()`` finds little left to do, and to drop the range before it
/// from the page cache: a large attachment passes through the cache instead
/// of filling it, and its pages are reused for the rest of the content.
final class AttachmentWriter {
    /// Bytes hashed and written at a time: enough that handing a batch to
    /// another thread costs little, little enough that memory stays flat.
    static let batchSize = 1 << 20
    /// How many bytes are written between two requests to start writeback.
    static let writebackInterval = 8 << 20

    private let store: AttachmentStore
    private let pin = UUID()
    private let temporaryPath: String
    private var descriptor: Int32
    private let digests = ContentDigests()
    private var batch: [UInt8] = []
    private var length = 0
    /// Where the range whose writeback was last started begins, and where the one before it began.
    private var writebackStart = 0
    private var dropStart = 0

    init(store: AttachmentStore) throws(StoreError) {
        self.store = store
        temporaryPath = store.folder + "/tmp/" + pin.uuidString
        descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.failure("cannot create \(temporaryPath)") }
        flock(descriptor, LOCK_EX)
    }

    deinit {
        if descriptor >= 0 {
            close(descriptor)
            unlink(temporaryPath)
        }
    }

    /// Adds `bytes` to the content, writing each batch as it fills once the one
    /// before it is hashed.
    func append(_ bytes: some Collection<UInt8>) async throws(StoreError) {
        var rest = bytes[...]
        while !rest.isEmpty {
            let room = Self.batchSize - batch.count
            if batch.isEmpty && length > 0 { batch.reserveCapacity(Self.batchSize) }
            batch.append(contentsOf: rest.prefix(room))
            rest = rest.dropFirst(room)
            if batch.count == Self.batchSize { try await writeBatch() }
        }
    }

    /// Writes what is left of the content and waits until all of it is hashed.
    func writeRest() async throws(StoreError) {
        if !batch.isEmpty { try await writeBatch() }
        await digests.hashed()
    }

    private func writeBatch() async throws(StoreError) {
        await digests.hashed()
        let full = batch
        batch = []
        try write(full)
    }

    /// Hashes and writes `bytes` as the next part of the content.
    func write(_ bytes: [UInt8]) throws(StoreError) {
        digests.update(bytes)
        let written = bytes.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let count = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += count
            }
            return true
        }
        guard written else { throw Self.failure("cannot write attachment") }
        length += bytes.count
        if length - writebackStart >= Self.writebackInterval {
            // POSIX_FADV_DONTNEED starts the writeback of dirty pages and drops clean
            // ones: the range just written goes to disk, the one before it (written
            // back since) leaves the cache.
            posix_fadvise(descriptor, off_t(dropStart), off_t(length - dropStart), POSIX_FADV_DONTNEED)
            dropStart = writebackStart
            writebackStart = length
        }
    }

    /// Makes the content durable, moves the file to its content address
    /// (replacing an identical one) and pins it until the caller's write ends.
    func finish() throws(StoreError) -> StagedAttachment {
        if !batch.isEmpty {
            let rest = batch
            batch = []
            try write(rest)
        }
        let (key, digest) = digests.finalize()
        guard fsync(descriptor) == 0 else { throw Self.failure("cannot write attachment") }
        if writebackStart > 0 { posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED) }
        let staged = StagedAttachment(key: key, digest: digest, length: length, pin: pin)
        store.pin(staged)
        guard rename(temporaryPath, store.path(for: staged.key)) == 0 else {
            let error = Self.failure("cannot store attachment")
            store.release(staged)
            throw error
        }
        close(descriptor)
        descriptor = -1
        guard store.syncFolder() else {
            store.release(staged)
            throw Self.failure("cannot store attachment")
        }
        return staged
    }

    /// The error for a failed system call, read from `errno`: a full disk or quota is
    /// 507 insufficient_storage (the file is removed when the writer is dropped), anything else 500.
    private static func failure(_ what: String) -> StoreError {
        let cause = errno
        let reason = "\(what): \(String(cString: strerror(cause)))"
        return cause == ENOSPC || cause == EDQUOT ? .insufficientStorage(reason) : .internal(reason)
    }
}

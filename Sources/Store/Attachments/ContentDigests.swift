import Crypto
import Dispatch
import FoundationEssentials
import Locking

/// The two digests of attachment content: CouchDB's MD5 (the `md5-` digest a
/// replicator checks against the sender's) and the SHA-256 that names the file.
///
/// Content comes in batches. The first is hashed on the caller's thread, as
/// most attachments are one batch; from the second on, each digest runs on a
/// queue of its own while the caller writes the batch to its file and receives
/// the next. A caller that awaits ``hashed()`` before each ``update(_:)`` keeps
/// one batch in flight, so memory stays flat whatever the content's size.
///
/// ```swift
/// let digests = ContentDigests()
/// for batch in batches {
///     await digests.hashed()
///     digests.update(batch)
///     try write(batch)
/// }
/// let (key, digest) = digests.finalize()
/// ```
final class ContentDigests {
    private let md5 = Locked(Insecure.MD5())
    private let sha256 = Locked(SHA256())
    private let md5Queue = DispatchQueue(label: "syncd.store.attachment-md5", qos: .userInitiated)
    private let sha256Queue = DispatchQueue(label: "syncd.store.attachment-sha256", qos: .userInitiated)
    private let inFlight = DispatchGroup()
    private var batches = 0

    /// Hashes `batch` after the batches before it: the first here, the others
    /// on the digests' queues, returning at once.
    func update(_ batch: [UInt8]) {
        defer { batches += 1 }
        let (md5, sha256) = (self.md5, self.sha256)
        guard batches > 0 else {
            Self.hash(batch, into: md5)
            Self.hash(batch, into: sha256)
            return
        }
        md5Queue.async(group: inFlight) { Self.hash(batch, into: md5) }
        sha256Queue.async(group: inFlight) { Self.hash(batch, into: sha256) }
    }

    private static func hash<Hash: HashFunction>(_ batch: [UInt8], into digest: Locked<Hash>) {
        batch.withUnsafeBytes { bytes in digest.withLock { $0.update(bufferPointer: bytes) } }
    }

    /// Returns once every batch given so far is hashed, without holding a thread.
    func hashed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            inFlight.notify(queue: .global()) { continuation.resume() }
        }
    }

    /// The digests of all the batches (waiting for any still being hashed): the
    /// SHA-256 in lower-case hex, and CouchDB's `md5-<base64>`.
    func finalize() -> (key: String, digest: String) {
        inFlight.wait()
        let key = Hex.string(sha256.withLock { $0.finalize() })
        return (key, "md5-" + Data(md5.withLock { $0.finalize() }).base64EncodedString())
    }
}

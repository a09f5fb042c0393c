import FoundationEssentials
import Locking

/// A private folder of attachment files that belong to no database: where
/// content read from one remote waits until it is sent to another. Files are
/// staged as a database stages them (streamed, hashed, durable) and deleted
/// when discarded. The folder is made at the first staging and goes with
/// ``removeAll()``.
public final class AttachmentSpool: Sendable {
    /// The folder.
    public let folder: String
    private let store = Locked<AttachmentStore?>(nil)

    /// A spool in `folder`, made (owner-only) when first needed.
    public init(folder: String) {
        self.folder = folder
    }

    /// Streams `chunks` to a file, failing with 413 past `limit` bytes.
    public func stage<Chunks: AsyncSequence>(_ chunks: Chunks, limit: Int) async throws -> StagedAttachment
    where Chunks.Element: Collection<UInt8> {
        let store = try self.store.withLock { (store: inout AttachmentStore?) throws(StoreError) -> AttachmentStore in
            if let store { return store }
            let made = try AttachmentStore(folder: folder)
            store = made
            return made
        }
        return try await store.stage(chunks, limit: limit)
    }

    /// The file holding `staged`.
    public func path(of staged: StagedAttachment) -> String { folder + "/" + staged.key }

    /// Deletes the file of `staged` unless another staging of the same content holds it.
    public func discard(_ staged: StagedAttachment) { store.withLock { $0 }?.discard(staged) }

    /// Deletes the folder and everything in it.
    public func removeAll() {
        store.withLock { store in
            guard store != nil else { return }
            try? FileManager.default.removeItem(atPath: folder)
            store = nil
        }
    }
}

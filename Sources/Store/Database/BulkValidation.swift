import Dispatch
import Locking

/// The uploads of one bulk write, checked in chunks by whichever thread gets
/// to a chunk first: the caller, or the writer, which takes the chunks in
/// order and applies each as soon as it is checked. So checking overlaps
/// writing, and the writer never waits for a chunk that no thread has started.
final class BulkValidation: Sendable {
    /// A checked upload: its id (as far as it has one) and the document or the reason it is refused.
    typealias Outcome = (id: String, parsed: Result<Database.ValidDocument, StoreError>)

    /// Uploads per chunk: small enough that the writer starts early, large
    /// enough that claiming a chunk costs nothing next to checking it.
    static let chunkSize = 64

    private enum Chunk {
        case waiting
        case checking
        case checked([Outcome])
    }

    private let uploads: [DocumentUpload]
    private let check: @Sendable (DocumentUpload) -> Outcome
    private let chunks: Locked<[Chunk]>
    /// Signalled when the chunk of the same index is checked.
    private let checked: [DispatchSemaphore]

    init(_ uploads: [DocumentUpload], check: @escaping @Sendable (DocumentUpload) -> Outcome) {
        self.uploads = uploads
        self.check = check
        let count = (uploads.count + Self.chunkSize - 1) / Self.chunkSize
        chunks = Locked(Array(repeating: .waiting, count: count))
        checked = (0..<count).map { _ in DispatchSemaphore(value: 0) }
    }

    /// The number of chunks.
    var chunkCount: Int { checked.count }

    /// Checks every chunk no thread has started, in order.
    func checkRemaining() {
        for index in 0..<chunkCount where claim(index) { finish(index) }
    }

    /// The outcomes of chunk `index`, in upload order: checked here if no
    /// thread has started it, else waited for. They stay here and are freed
    /// with the batch by the caller, off the writer's thread, which is what
    /// limits a bulk write.
    func outcomes(ofChunk index: Int) -> [Outcome] {
        if claim(index) {
            finish(index)
        } else {
            // Another thread is checking it: rather than wait, check chunks further on.
            var ahead = index + 1
            while !isChecked(index), ahead < chunkCount {
                if claim(ahead) { finish(ahead) }
                ahead += 1
            }
            checked[index].wait()
        }
        return chunks.withLock { chunks in
            guard case .checked(let outcomes) = chunks[index] else { preconditionFailure("chunk \(index) is not checked") }
            return outcomes
        }
    }

    /// The staged attachment files that the checked documents pin.
    var staged: [StagedAttachment] {
        chunks.withLock { chunks in
            chunks.flatMap { chunk -> [StagedAttachment] in
                guard case .checked(let outcomes) = chunk else { return [] }
                return outcomes.flatMap { outcome -> [StagedAttachment] in
                    if case .success(let valid) = outcome.parsed { valid.document.staged } else { [] }
                }
            }
        }
    }

    private func isChecked(_ index: Int) -> Bool {
        chunks.withLock { chunks in if case .checked = chunks[index] { true } else { false } }
    }

    private func claim(_ index: Int) -> Bool {
        chunks.withLock { chunks in
            guard case .waiting = chunks[index] else { return false }
            chunks[index] = .checking
            return true
        }
    }

    private func finish(_ index: Int) {
        let range = index * Self.chunkSize..<min((index + 1) * Self.chunkSize, uploads.count)
        let outcomes = uploads[range].map(check)
        chunks.withLock { $0[index] = .checked(outcomes) }
        checked[index].signal()
    }
}

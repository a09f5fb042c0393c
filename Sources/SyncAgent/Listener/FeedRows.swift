import Locking
import Store

/// The rows of the continuous feeds' latest pages as written, for the other feeds that send the same.
///
/// The store hands feeds at the same place the same page (``Database/changeFeed(_:pageSize:)``);
/// an agent serves one feed per member, all with the same options, so each page would be
/// written as rows once per member. The first feed writes them; the others send its bytes.
///
/// A page of an unfiltered feed is named by its database, first and last sequence and length,
/// and the options that shape its rows: a change is listed at the sequence of the write that
/// made it, and the rows between two sequences can only lose members over time (documents
/// changed since move on), so equal names are equal rows.
final class FeedRows: Sendable {
    /// Which page, written how.
    struct Key: Hashable {
        let database: String
        let instance: Int64
        let first: UInt64
        let last: UInt64
        let count: Int
        let allLeaves: Bool
        let includeDocuments: Bool
        let firstHandOnly: Bool
        let conflicts: Bool
        let eventSource: Bool
    }

    /// Pages kept, newest first replacing the oldest: a few databases' feeds at once.
    static let pagesKept = 8
    /// The most bytes the pages kept hold together, and so the most one page may have to be kept.
    static let bytesKept = 1 << 20

    private let pages = Locked<[(key: Key, rows: [UInt8])]>([])

    /// The rows of `changes` for a feed of `database` read with `options`: those another feed
    /// wrote, or written by `write`. A filtered feed's rows are its own.
    func rows(of changes: [Change], in database: Database, options: ChangesOptions, conflicts: Bool, eventSource: Bool,
              write: ([Change]) -> [UInt8]) -> [UInt8] {
        guard !options.isFiltered, let first = changes.first, let last = changes.last else { return write(changes) }
        let key = Key(database: database.uuid, instance: database.instanceStartTime, first: first.sequence,
                      last: last.sequence, count: changes.count, allLeaves: options.allLeaves,
                      includeDocuments: options.includeDocuments, firstHandOnly: options.firstHandOnly, conflicts: conflicts,
                      eventSource: eventSource)
        if let kept = pages.withLock({ pages in pages.first { $0.key == key }?.rows }) { return kept }
        let rows = write(changes)
        guard rows.count <= Self.bytesKept else { return rows }
        pages.withLock { pages in
            guard !pages.contains(where: { $0.key == key }) else { return }
            pages.insert((key, rows), at: 0)
            var bytes = 0
            pages = Array(pages.prefix { page in
                bytes += page.rows.count
                return bytes <= Self.bytesKept
            }.prefix(Self.pagesKept))
        }
        return rows
    }
}

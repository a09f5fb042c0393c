import Locking

/// The last page a ``ChangeFeed`` read, kept for the database's other feeds at the same place.
///
/// An agent serves one continuous feed per member, and each commit wakes all of them at the
/// same sequence: without this, each would read and decode the same rows and bodies again
/// (in a group of ten, nine times each; a tenth of the agents' CPU while converging). The
/// first feed to ask reads the page; the others, asking for the same page, take it.
///
/// A page read earlier is a page the feed could have read then: a document changed since
/// then comes again at its new sequence, as it would to a feed that had read it then.
/// Only pages with changes are kept, so no feed takes an empty page after a commit that
/// should have woken it; and only small ones (``largestKept``), so a page of large bodies
/// is not held once its feeds have gone on.
final class SharedFeedPage: Sendable {
    /// What a page was read for: two feeds asking the same take the same rows.
    struct Key: Equatable {
        let since: UInt64
        let limit: Int?
        let allLeaves: Bool
        let includeDocuments: Bool
        let firstHandOnly: Bool

        /// Nil for options whose pages are not shared (a filter, or newest first).
        init?(_ options: ChangesOptions) {
            guard !options.descending, !options.isFiltered else { return nil }
            (since, limit, allLeaves, includeDocuments) = (options.since, options.limit, options.allLeaves, options.includeDocuments)
            firstHandOnly = options.firstHandOnly
        }
    }

    /// The largest page kept, in bytes of the stored rows it was read from.
    static let largestKept = 1 << 20

    private let last = Locked<(key: Key, page: ChangesPage)?>(nil)

    /// The page for `options`: the one kept if it was read for the same, else read by `read` (and kept if it may be).
    func page(_ options: ChangesOptions, read: () throws(StoreError) -> ChangesPage) throws(StoreError) -> ChangesPage {
        guard let key = Key(options) else { return try read() }
        if let kept = last.withLock({ $0?.key == key ? $0?.page : nil }) { return kept }
        let page = try read()
        if !page.changes.isEmpty && page.rowBytes <= Self.largestKept {
            last.withLock { $0 = (key, page) }
        }
        return page
    }

    /// Lets go of the page kept (the database is going idle).
    func release() { last.withLock { $0 = nil } }
}

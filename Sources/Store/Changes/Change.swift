/// One entry of the changes feed: a document at its latest sequence.
public struct Change: Sendable, Hashable {
    /// The sequence of the document's latest change.
    public let sequence: UInt64
    /// The document id.
    public let id: String
    /// Whether the winning revision is a tombstone.
    public let deleted: Bool
    /// The winning revision first, then (for `style=all_docs`) the other leaves.
    public let revisions: [RevisionID]
    /// The winning revision with its body, when asked for (`include_docs`).
    public let document: DocumentRevision?
}

/// What to read from the changes feed.
public struct ChangesOptions: Sendable {
    /// Only changes after this sequence.
    public var since: UInt64 = 0
    /// At most this many changes.
    public var limit: Int?
    /// Newest first.
    public var descending = false
    /// Every leaf revision (`style=all_docs`), not only the winner.
    public var allLeaves = false
    /// Include the winning revision's document.
    public var includeDocuments = false
    /// Only these documents (`filter=_doc_ids`).
    public var documentIDs: Set<String>?
    /// Only documents whose winning revision matches (`filter=_selector`).
    public var selector: Selector?
    /// Only design documents (`filter=_design`).
    public var designOnly = false
    /// Only first-hand changes: a document whose latest change a group member's pull wrote
    /// (``Database/bulkDocs(_:newEdits:relayed:)``) is left out. A member reads the others'
    /// first-hand feeds, so each revision is listed to it once, by the member it entered at.
    public var firstHandOnly = false

    /// All changes since the start, winners only.
    public init(since: UInt64 = 0) { self.since = since }

    /// Whether one page may pass over the whole database (a filter that most documents
    /// fail): such a page belongs on ``ScanThreads``. Any other page reads at most
    /// `limit` rows, quick enough for the caller's thread.
    public var mayScanEverything: Bool { selector != nil || designOnly }

    /// Whether a filter leaves changes out (`_doc_ids`, `_selector`, `_design`).
    public var isFiltered: Bool { documentIDs != nil || selector != nil || designOnly }
}

/// A page of the changes feed.
public struct ChangesPage: Sendable {
    /// The changes, in sequence order (reversed when descending).
    public let changes: [Change]
    /// Where to continue from: the last change's sequence, or the database's
    /// last sequence when the feed was read to its end.
    public let lastSequence: UInt64
    /// About how many changes come after `lastSequence`.
    public let pending: Int
    /// Bytes of the stored rows the changes were read from (their revision trees), when read with them.
    var rowBytes = 0
}

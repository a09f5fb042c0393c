import JSON
import Store

/// A position in a changes feed. CouchDB's sequences are opaque JSON values
/// (numbers in 1.x, strings since 2.0); they are only ever passed back as `since`.
public struct ChangeSequence: Sendable, Hashable, CustomStringConvertible {
    /// The sequence as the feed gave it.
    public let value: JSON

    /// The start of every feed.
    public static let zero = ChangeSequence(.number(0))

    /// A sequence as given by a feed or a checkpoint.
    public init(_ value: JSON) { self.value = value }

    /// A local store's sequence.
    public init(_ number: UInt64) { self.value = .number(Double(number)) }

    /// The text to send as `since`.
    public var description: String {
        switch value {
        case .string(let text): text
        case .number(let number) where number == number.rounded() && abs(number) < 1e15: String(Int64(number))
        default: value.serialized()
        }
    }

    /// The sequence as a local store's number, if it is one.
    public var localNumber: UInt64? {
        switch value {
        case .number(let number): UInt64(exactly: number)
        case .string(let text): UInt64(text)
        default: nil
        }
    }
}

/// What to read from a changes feed.
public struct ChangeFeedRequest: Sendable {
    /// Changes after this sequence.
    public var since: ChangeSequence
    /// Keep following the feed after its end.
    public var continuous: Bool
    /// About how many changes per batch.
    public var batchSize: Int
    /// Only the documents this filter lets through.
    public var filter: ReplicationFilter?
    /// Only the changes that entered the group at the source (``ChangesOptions/firstHandOnly``):
    /// a syncd source leaves out what its group members' pulls wrote; any other sends everything.
    public var firstHandOnly = false
    /// The query parameter that asks a syncd listener for first-hand changes only.
    static let firstHandParameter = "syncd_first_hand"
    /// How often a remote continuous feed sends a heartbeat, in milliseconds.
    public var heartbeatMilliseconds: Int
    /// Whether the target is known to have a revision, given as its text (`N-digest`), as the
    /// winner of a document: see ``Endpoint/recentWinners``.
    public typealias TargetWinners = @Sendable (_ revision: UnsafeBufferPointer<UInt8>, _ id: String) -> Bool

    /// The target's ``Endpoint/recentWinnerTexts``: a remote feed's row naming only a revision
    /// the target has as its winner is counted (``ChangeBatch/alreadyHeld``), not queued. In a
    /// group most rows are such, each revision listed by every member: they are asked about
    /// as the feed sent them, no revision made.
    public var targetWinners: TargetWinners?

    /// A request for the feed after `since`.
    public init(
        since: ChangeSequence, continuous: Bool, batchSize: Int, filter: ReplicationFilter?, heartbeatMilliseconds: Int = 10_000,
        targetWinners: TargetWinners? = nil
    ) {
        self.since = since
        self.continuous = continuous
        self.batchSize = batchSize
        self.filter = filter
        self.heartbeatMilliseconds = heartbeatMilliseconds
        self.targetWinners = targetWinners
    }
}

/// One change: a document's leaves (`style=all_docs`) at its latest sequence.
public struct ChangedDocument: Sendable, Hashable {
    /// The change's sequence.
    public var sequence: ChangeSequence
    /// The document id.
    public var id: String
    /// The document's leaf revisions, winner first.
    public var revisions: [RevisionID]
    /// Whether the winning revision is a tombstone.
    public var deleted: Bool
    /// The JSON text of the document as the feed carried it (`include_docs`), kept when the row
    /// names one first revision and its line was short enough. Parsed only if the target lacks it.
    public var carriedDocument: [UInt8]?

    /// The document's only revision, whole, when the feed carried it and it needs nothing
    /// more: a first revision without attachments has no history or attachment to fetch,
    /// so the fetcher passes it on without asking the source again. Made only when asked:
    /// most changes a member's feed lists are revisions the target has already. A carried
    /// text that is not JSON is no revision: the source is asked the usual way.
    public var firstRevision: ReplicatedRevision? {
        guard let carriedDocument, let doc = try? JSON(parsing: carriedDocument) else { return nil }
        return RemoteEndpoint.firstRevision(of: self, in: doc)
    }

    /// Whether the row names one revision, a first one, not deleted: one a carried document may hold whole.
    var onlyRevisionIsFirst: Bool { !deleted && revisions.count == 1 && revisions[0].generation == 1 }

    /// A change.
    public init(sequence: ChangeSequence, id: String, revisions: [RevisionID], deleted: Bool, carriedDocument: [UInt8]? = nil) {
        self.sequence = sequence
        self.id = id
        self.revisions = revisions
        self.deleted = deleted
        self.carriedDocument = carriedDocument
    }
}

/// A batch of changes read from a feed.
public struct ChangeBatch: Sendable {
    /// The changes, in feed order.
    public var changes: [ChangedDocument]
    /// Where the feed stands after this batch (for the checkpoint).
    public var lastSequence: ChangeSequence
    /// About how many changes remain after this batch, when the source says.
    public var pending: Int?
    /// The source had nothing more to send when this batch was cut.
    public var caughtUp: Bool
    /// Changes read but left out, the target having their only revision as its winner
    /// (``ChangeFeedRequest/targetWinners``): counted as checked and completed with this batch.
    public var alreadyHeld: Int

    /// How many changes the batch accounts for: its rows and those left out as held.
    public var count: Int { changes.count + alreadyHeld }

    /// A batch.
    public init(changes: [ChangedDocument], lastSequence: ChangeSequence, pending: Int?, caughtUp: Bool, alreadyHeld: Int = 0) {
        self.changes = changes
        self.lastSequence = lastSequence
        self.pending = pending
        self.caughtUp = caughtUp
        self.alreadyHeld = alreadyHeld
    }
}

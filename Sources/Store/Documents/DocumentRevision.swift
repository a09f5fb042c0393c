import FoundationEssentials
import JSON

/// One revision of a document as read from the store.
public struct DocumentRevision: Sendable, Hashable {
    /// The document id.
    public let id: String
    /// This revision's id.
    public let revision: RevisionID
    /// Whether this revision is a tombstone.
    public let deleted: Bool
    /// The body's own fields (no `_` fields).
    public let body: JSON.Object
    /// The attachments this revision has.
    public let attachments: [Attachment]
    /// This revision and its known ancestors, newest first (`_revisions`).
    public let history: [RevisionID]
    /// Other undeleted leaves of the document, best first (`_conflicts`).
    public var conflicts: [RevisionID] { leaves.conflicts.filter { $0 != revision } }
    /// Other deleted leaves (`_deleted_conflicts`).
    public var deletedConflicts: [RevisionID] { leaves.deletedConflicts.filter { $0 != revision } }
    /// The document's conflicting leaves, one copy shared by all its revisions read together:
    /// a document with thousands of leaves would otherwise hold them once per leaf.
    let leaves: ConflictingLeaves
    /// The document's current sequence (`_local_seq`).
    public let sequence: UInt64
    /// Whether each revision in `history` still has its body (`_revs_info`);
    /// filled in by ``Database/document(id:revision:)`` only, empty elsewhere.
    public let availability: [RevisionAvailability]

    /// How an attachment appears in the document's JSON.
    public enum AttachmentForm: Sendable {
        /// Metadata only, `"stub": true`.
        case stub
        /// Inline base64 `data`.
        case data([UInt8])
        /// `"follows": true`: the stored bytes (encoded, for an encoded attachment)
        /// are sent as a MIME part after the JSON.
        case follows
    }

    /// Which special fields to add to the JSON form.
    public struct Fields: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `_revisions`.
        public static let revisions = Fields(rawValue: 1)
        /// `_conflicts`.
        public static let conflicts = Fields(rawValue: 2)
        /// `_deleted_conflicts`.
        public static let deletedConflicts = Fields(rawValue: 4)
        /// `_revs_info`.
        public static let revsInfo = Fields(rawValue: 8)
        /// `_local_seq`.
        public static let localSequence = Fields(rawValue: 16)
        /// `encoding` and `encoded_length` of attachments stored encoded (`att_encoding_info`).
        public static let encodingInfo = Fields(rawValue: 32)
    }

    /// The revision in CouchDB's JSON form: `_id`, `_rev`, `_deleted` when
    /// deleted, the requested special fields, the body, and `_attachments`.
    public func json(_ fields: Fields = [], attachments form: (Attachment) -> AttachmentForm = { _ in .stub }) -> JSON {
        var members: [(key: String, value: JSON)] = [("_id", .string(id)), ("_rev", .string(revision.description))]
        members.reserveCapacity(body.count + 4)
        if deleted { members.append(("_deleted", true)) }
        members.append(contentsOf: body.members)
        if !attachments.isEmpty {
            var entries: [(key: String, value: JSON)] = []
            for attachment in attachments {
                var entry: JSON.Object = [
                    "content_type": .string(attachment.contentType),
                    "revpos": .number(Double(attachment.revpos)),
                    "digest": .string(attachment.digest),
                ]
                // As CouchDB: `length` with a stub or a part that follows, not beside inline data.
                switch form(attachment) {
                case .stub:
                    entry["length"] = .number(Double(attachment.length))
                    entry["stub"] = true
                case .data(let bytes): entry["data"] = .string(Data(bytes).base64EncodedString())
                case .follows:
                    entry["length"] = .number(Double(attachment.length))
                    entry["follows"] = true
                }
                if fields.contains(.encodingInfo), let encoding = attachment.encoding {
                    entry["encoding"] = .string(encoding.name)
                    entry["encoded_length"] = .number(Double(encoding.length))
                }
                entries.append((attachment.name, .object(entry)))
            }
            members.append(("_attachments", .object(JSON.Object(uniqueMembers: entries))))
        }
        if fields.contains(.revisions) {
            members.append(("_revisions", .object([
                "start": .number(Double(revision.generation)),
                "ids": .array(history.map { .string($0.digest) }),
            ])))
        }
        if fields.contains(.revsInfo) {
            members.append(("_revs_info", .array(zip(history, availability).map { revision, availability in
                .object(["rev": .string(revision.description), "status": .string(availability.rawValue)])
            })))
        }
        if fields.contains(.conflicts), !conflicts.isEmpty {
            members.append(("_conflicts", .array(conflicts.map { .string($0.description) })))
        }
        if fields.contains(.deletedConflicts), !deletedConflicts.isEmpty {
            members.append(("_deleted_conflicts", .array(deletedConflicts.map { .string($0.description) })))
        }
        if fields.contains(.localSequence) {
            members.append(("_local_seq", .number(Double(sequence))))
        }
        return .object(JSON.Object(uniqueMembers: members))
    }
}

/// Whether a revision's body is still stored, as `_revs_info` reports it.
public enum RevisionAvailability: String, Sendable, Hashable {
    /// The body is stored.
    case available
    /// The body is gone (compacted, or the revision is known only by id).
    case missing
    /// The revision is a stored tombstone.
    case deleted
}

/// The leaves other than the winner of one document, as CouchDB lists them.
struct ConflictingLeaves: Sendable, Hashable {
    /// Undeleted ones, best first (`_conflicts`).
    let conflicts: [RevisionID]
    /// Deleted ones (`_deleted_conflicts`).
    let deletedConflicts: [RevisionID]

    init(_ tree: RevisionTree) {
        conflicts = tree.conflicts
        deletedConflicts = tree.deletedConflicts
    }

    private init() {
        conflicts = []
        deletedConflicts = []
    }

    /// No conflicting leaves.
    static let none = ConflictingLeaves()
}

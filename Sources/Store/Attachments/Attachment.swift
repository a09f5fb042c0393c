/// What a revision says about one of its attachments. The bytes live in a
/// content-addressed file beside the database, shared by every revision that
/// has the same content.
public struct Attachment: Sendable, Hashable {
    /// The attachment's name within its document.
    public var name: String
    /// The MIME type given when it was attached.
    public var contentType: String
    /// The length in bytes of the stored content.
    public var length: Int
    /// CouchDB's digest of the content: `md5-` and the base64 MD5.
    public var digest: String
    /// The generation of the revision that last changed this attachment.
    public var revpos: Int
    /// The SHA-256 of the content in lower-case hex: the name of its file.
    public var key: String

    /// An attachment description.
    public init(name: String, contentType: String, length: Int, digest: String, revpos: Int, key: String) {
        self.name = name
        self.contentType = contentType
        self.length = length
        self.digest = digest
        self.revpos = revpos
        self.key = key
    }
}

/// What a revision says about one of its attachments. The bytes live in a
/// content-addressed file beside the database, shared by every revision that
/// has the same content.
public struct Attachment: Sendable, Hashable {
    /// The attachment's name within its document.
    public var name: String
    /// The MIME type given when it was attached.
    public var contentType: String
    /// The length in bytes of the content (decoded, when stored encoded).
    public var length: Int
    /// CouchDB's digest of the content as stored: `md5-` and the base64 MD5
    /// (of the gzip bytes when stored gzip-encoded, as CouchDB computes it).
    public var digest: String
    /// The generation of the revision that last changed this attachment.
    public var revpos: Int
    /// The SHA-256 of the stored bytes in lower-case hex: the name of its file.
    public var key: String
    /// How the stored bytes encode the content; `nil` when they are the content.
    public var encoding: AttachmentEncoding?

    /// An attachment description.
    public init(name: String, contentType: String, length: Int, digest: String, revpos: Int, key: String,
                encoding: AttachmentEncoding? = nil) {
        self.name = name
        self.contentType = contentType
        self.length = length
        self.digest = digest
        self.revpos = revpos
        self.key = key
        self.encoding = encoding
    }

    /// The length of the stored bytes.
    public var storedLength: Int { encoding?.length ?? length }
}

/// A content coding an attachment is stored in. CouchDB keeps compressible
/// attachments gzip-compressed and its replicator sends them so
/// (`"encoding": "gzip", "encoded_length": N`); syncd keeps them as received.
public struct AttachmentEncoding: Sendable, Hashable {
    /// The coding's name: `gzip`, the only one CouchDB uses.
    public var name: String
    /// The length of the encoded bytes (`encoded_length`).
    public var length: Int

    /// An encoding of `length` bytes.
    public init(name: String, length: Int) {
        self.name = name
        self.length = length
    }
}

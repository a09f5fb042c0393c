import Crypto

/// The digest of a new revision, computed from what the edit is rather than
/// when or where it was made: the parent revision, the deletion flag, the
/// body in canonical form (keys sorted) and the attachments' digests. Two
/// peers that make the same edit to the same revision get the same id.
enum RevisionDigest {
    /// The digest as CouchDB writes it: 32 lower-case hex digits.
    static func digest(parent: RevisionID?, deleted: Bool, canonicalBody: [UInt8], attachments: [Attachment]) -> String {
        hex(bytes(parent: parent, deleted: deleted, canonicalBody: canonicalBody, attachments: attachments))
    }

    /// The 32 lower-case hex digits of a digest.
    static func hex(_ digest: Insecure.MD5Digest) -> String {
        digest.withUnsafeBytes { HexDigest.unpack($0.assumingMemoryBound(to: UInt8.self)) }
    }

    /// The digest's 16 bytes: MD5 over the deletion flag, the parent's id and a
    /// zero byte, the body, then per attachment (in name order) a zero byte,
    /// its name, a zero byte and its digest.
    static func bytes(parent: RevisionID?, deleted: Bool, canonicalBody: [UInt8], attachments: [Attachment]) -> Insecure.MD5Digest {
        var md5 = Insecure.MD5()
        func update(_ byte: UInt8) { withUnsafeBytes(of: byte) { md5.update(bufferPointer: $0) } }
        func update(_ text: String) {
            var text = text
            text.withUTF8 { md5.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        }
        update(deleted ? 1 : 0)
        if let parent { update(parent.description) }
        update(0)
        canonicalBody.withUnsafeBytes { md5.update(bufferPointer: $0) }
        for attachment in attachments.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
            update(0)
            update(attachment.name)
            update(0)
            update(attachment.digest)
        }
        return md5.finalize()
    }
}

import Crypto

/// The digest of a new revision, computed from what the edit is rather than
/// when or where it was made: the parent revision, the deletion flag, the
/// body in canonical form (keys sorted) and the attachments' digests. Two
/// peers that make the same edit to the same revision get the same id.
enum RevisionDigest {
    static func digest(parent: RevisionID?, deleted: Bool, canonicalBody: [UInt8], attachments: [Attachment]) -> String {
        var md5 = Insecure.MD5()
        md5.update(data: [deleted ? 1 : 0])
        md5.update(data: Array((parent?.description ?? "").utf8) + [0])
        md5.update(data: canonicalBody)
        for attachment in attachments.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
            md5.update(data: [0] + Array(attachment.name.utf8) + [0] + Array(attachment.digest.utf8))
        }
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(32)
        for byte in md5.finalize() {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

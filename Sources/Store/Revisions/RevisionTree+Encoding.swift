// The binary form of a revision tree, kept in one SQLite BLOB per document.
//
// Version 1, all integers unsigned LEB128 varints unless noted:
//
//     version            1 byte, 1
//     node count
//     per node, in tree order:
//       flags            1 byte: deleted, has parent, has body, packed digest, has attachments,
//                        encoded attachments
//       generation
//       parent distance  (if has parent) own index minus the parent's index
//       digest           16 bytes when packed (32 lower-case hex digits), else length + UTF-8
//       body             (if has body) length + bytes
//       attachments      (if any) count, then each: name, content type, length (zigzag),
//                        digest, revpos (zigzag), key; strings as length + UTF-8;
//                        with the "encoded attachments" flag, each then has its
//                        encoding's name ("" for none) and, if named, its length
//
// Decoding checks every invariant the tree relies on (sorted unique revisions,
// parents one generation older and earlier in the order) and throws rather
// than trusting the bytes.

import Crypto

extension RevisionTree {
    /// The format version written as the first byte.
    static let encodingVersion: UInt8 = 1

    /// The compact binary form stored in the document's row; `init(decoding:)` reads it back.
    /// Equal trees give equal bytes.
    func encoded() -> [UInt8] {
        var capacity = 2 + nodes.count * 24
        for node in nodes { capacity += node.body?.count ?? 0 }
        var writer = ByteWriter(nodeCount: nodes.count, capacity: capacity)
        for (index, node) in nodes.enumerated() {
            writer.writeNode(generation: node.revision.generation, parentDistance: node.parent.map { index - $0 },
                             digest: .text(node.revision.digest), deleted: node.deleted,
                             body: node.body, attachments: node.attachments)
        }
        return writer.bytes
    }

    /// At most the bytes `encoded()` spends on one node with these contents, whatever
    /// its place: what a write may add to its tree, so the store need not encode the
    /// tree after each write to know it stays within its size limit.
    static func encodedSizeBound(digest: String, body: [UInt8]?, attachments: [Attachment]) -> Int {
        // Flags, generation, parent distance, digest length: a byte and three varints.
        var size = 1 + 3 * 10 + digest.utf8.count
        if let body { size += 10 + body.count }
        if !attachments.isEmpty { size += 10 }
        for attachment in attachments {
            size += 8 * 10 + attachment.name.utf8.count + attachment.contentType.utf8.count
                + attachment.digest.utf8.count + attachment.key.utf8.count + (attachment.encoding?.name.utf8.count ?? 0)
        }
        return size
    }

    /// The encoding of a tree whose only revision is `1-<digest>`: the bytes
    /// `encoded()` gives for that tree, written without building it.
    static func encodedFirstRevision(digest: Insecure.MD5Digest, deleted: Bool, body: [UInt8], attachments: [Attachment]) -> [UInt8] {
        var writer = ByteWriter(nodeCount: 1, capacity: 26 + body.count)
        writer.writeNode(generation: 1, parentDistance: nil, digest: .packed(digest), deleted: deleted,
                         body: body, attachments: attachments)
        return writer.bytes
    }

    /// The nodes encoded in `bytes`, checked to form a valid tree; without `bodies`, every
    /// node's body is left out (`nil`), for questions about revisions alone.
    static func decodeNodes(_ bytes: some Collection<UInt8>, bodies: Bool = true) throws(StoreError) -> [Node] {
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(StoreError) in try decodeNodes(buffer: buffer, bodies: bodies) }
        } ?? Array(bytes).withUnsafeBufferPointer { buffer in
            Result { () throws(StoreError) in try decodeNodes(buffer: buffer, bodies: bodies) }
        }
        return try result.get()
    }

    /// Decodes from contiguous bytes.
    private static func decodeNodes(buffer: UnsafeBufferPointer<UInt8>, bodies: Bool) throws(StoreError) -> [Node] {
        var reader = ByteReader(buffer: buffer)
        let version = try reader.readByte()
        guard version == encodingVersion else {
            throw corrupt("unknown revision tree format version \(version)")
        }
        let count = try reader.readCount()
        var nodes: [Node] = []
        nodes.reserveCapacity(count)
        for index in 0..<count {
            let flags = try reader.readByte()
            guard flags & ~NodeFlags.all == 0 else { throw corrupt("unknown node flags") }
            let generation = try reader.readVarint()
            guard generation >= 1, generation < 1 << 40 else { throw corrupt("invalid generation") }
            var parent: Int?
            if flags & NodeFlags.hasParent != 0 {
                let distance = try reader.readVarint()
                guard distance >= 1, distance <= UInt64(index) else { throw corrupt("parent out of range") }
                let parentIndex = index - Int(distance)
                guard UInt64(nodes[parentIndex].revision.generation) == generation - 1 else {
                    throw corrupt("parent is not one generation older")
                }
                parent = parentIndex
            }
            let digest: String
            if flags & NodeFlags.packedDigest != 0 {
                digest = HexDigest.unpack(try reader.readBytes(HexDigest.packedCount))
            } else {
                digest = try reader.readString()
                guard !digest.isEmpty else { throw corrupt("empty digest") }
            }
            let revision = RevisionID(generation: Int(generation), digest: digest)
            if let previous = nodes.last, !(previous.revision < revision) {
                throw corrupt("revisions out of order")
            }
            var body: [UInt8]?
            if flags & NodeFlags.hasBody != 0 {
                let length = try reader.readCount()
                let bytes = try reader.readBytes(length)
                if bodies { body = Array(bytes) }
            }
            var attachments: [Attachment] = []
            if flags & NodeFlags.hasAttachments != 0 {
                let attachmentCount = try reader.readCount()
                guard attachmentCount > 0 else { throw corrupt("empty attachment list") }
                attachments.reserveCapacity(attachmentCount)
                for _ in 0..<attachmentCount {
                    let name = try reader.readString()
                    let contentType = try reader.readString()
                    let length = try reader.readSignedVarint()
                    let attachmentDigest = try reader.readString()
                    let revpos = try reader.readSignedVarint()
                    let key = try reader.readString()
                    var encoding: AttachmentEncoding?
                    if flags & NodeFlags.encodedAttachments != 0 {
                        let encodingName = try reader.readString()
                        if !encodingName.isEmpty {
                            let encodedLength = try reader.readVarint()
                            guard encodedLength < 1 << 53 else { throw corrupt("invalid encoded length") }
                            encoding = AttachmentEncoding(name: encodingName, length: Int(encodedLength))
                        }
                    }
                    attachments.append(Attachment(name: name, contentType: contentType, length: length,
                                                  digest: attachmentDigest, revpos: revpos, key: key, encoding: encoding))
                }
            }
            nodes.append(Node(revision: revision, parent: parent, deleted: flags & NodeFlags.deleted != 0,
                              body: body, attachments: attachments))
        }
        guard reader.isAtEnd else { throw corrupt("trailing bytes") }
        return nodes
    }

    /// The error for bytes that are not a valid encoded tree.
    private static func corrupt(_ detail: String) -> StoreError {
        .internal("corrupt revision tree: \(detail)")
    }
}

/// Bits of a node's flags byte.
private enum NodeFlags {
    /// The revision is a tombstone.
    static let deleted: UInt8 = 1 << 0
    /// A parent distance follows.
    static let hasParent: UInt8 = 1 << 1
    /// A body follows.
    static let hasBody: UInt8 = 1 << 2
    /// The digest is stored as 16 bytes.
    static let packedDigest: UInt8 = 1 << 3
    /// An attachment list follows.
    static let hasAttachments: UInt8 = 1 << 4
    /// Each attachment carries its encoding.
    static let encodedAttachments: UInt8 = 1 << 5
    /// Every bit this version knows.
    static let all: UInt8 = 0b11_1111
}

/// CouchDB's usual digest, 32 lower-case hex digits, stored as its 16 bytes.
enum HexDigest {
    /// The size of a packed digest.
    static let packedCount = 16

    /// Appends the 16 bytes of `digest` and returns `true` when it is 32
    /// lower-case hex digits; otherwise appends nothing and returns `false`.
    static func append(_ digest: String, to bytes: inout [UInt8]) -> Bool {
        guard digest.utf8.count == packedCount * 2 else { return false }
        var packed: (UInt64, UInt64) = (0, 0)
        var digest = digest
        let valid = digest.withUTF8 { utf8 in
            withUnsafeMutableBytes(of: &packed) { output in
                for index in 0..<packedCount {
                    guard let high = nibble(utf8[2 * index]), let low = nibble(utf8[2 * index + 1]) else { return false }
                    output[index] = high << 4 | low
                }
                return true
            }
        }
        if valid { withUnsafeBytes(of: &packed) { bytes.append(contentsOf: $0) } }
        return valid
    }

    /// The value of a lower-case hex digit.
    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte &- UInt8(ascii: "a") &+ 10
        default: nil
        }
    }

    /// The 32 hex digits of 16 packed bytes.
    static func unpack(_ packed: UnsafeBufferPointer<UInt8>) -> String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: packedCount * 2) { text in
            digits.withUTF8Buffer { digits in
                for (index, byte) in packed.enumerated() {
                    text[2 * index] = digits[Int(byte >> 4)]
                    text[2 * index + 1] = digits[Int(byte & 0x0F)]
                }
            }
            return packedCount * 2
        }
    }
}

/// Appends the encoding's primitives to a byte array.
private struct ByteWriter {
    /// What was written so far.
    var bytes: [UInt8] = []

    /// A revision's digest as the writer receives it.
    enum Digest {
        /// As text: packed when it is 32 lower-case hex digits.
        case text(String)
        /// The 16 bytes of a digest this store computed.
        case packed(Insecure.MD5Digest)
    }

    /// A writer that has written the header of a tree with `nodeCount` nodes.
    init(nodeCount: Int, capacity: Int) {
        bytes.reserveCapacity(capacity)
        bytes.append(RevisionTree.encodingVersion)
        writeVarint(UInt64(nodeCount))
    }

    /// One node, in the layout described at the top of this file.
    mutating func writeNode(generation: Int, parentDistance: Int?, digest: Digest, deleted: Bool,
                            body: [UInt8]?, attachments: [Attachment]) {
        var flags: UInt8 = 0
        if deleted { flags |= NodeFlags.deleted }
        if parentDistance != nil { flags |= NodeFlags.hasParent }
        if body != nil { flags |= NodeFlags.hasBody }
        if !attachments.isEmpty { flags |= NodeFlags.hasAttachments }
        let encoded = attachments.contains { $0.encoding != nil }
        if encoded { flags |= NodeFlags.encodedAttachments }
        let flagsOffset = bytes.count
        bytes.append(flags)
        writeVarint(UInt64(generation))
        if let parentDistance { writeVarint(UInt64(parentDistance)) }
        switch digest {
        case .packed(let packed):
            bytes[flagsOffset] |= NodeFlags.packedDigest
            packed.withUnsafeBytes { bytes.append(contentsOf: $0) }
        case .text(let text):
            if HexDigest.append(text, to: &bytes) {
                bytes[flagsOffset] |= NodeFlags.packedDigest
            } else {
                writeString(text)
            }
        }
        if let body {
            writeVarint(UInt64(body.count))
            bytes.append(contentsOf: body)
        }
        if !attachments.isEmpty {
            writeVarint(UInt64(attachments.count))
            for attachment in attachments {
                writeString(attachment.name)
                writeString(attachment.contentType)
                writeSignedVarint(attachment.length)
                writeString(attachment.digest)
                writeSignedVarint(attachment.revpos)
                writeString(attachment.key)
                if encoded {
                    writeString(attachment.encoding?.name ?? "")
                    if let encoding = attachment.encoding { writeVarint(UInt64(encoding.length)) }
                }
            }
        }
    }

    /// An unsigned LEB128 varint: one byte for values below 128.
    mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Zigzag, so that any `Int` round-trips and small negatives stay short.
    mutating func writeSignedVarint(_ value: Int) {
        let value = Int64(value)
        writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// UTF-8 length, then the UTF-8 bytes.
    mutating func writeString(_ string: String) {
        writeVarint(UInt64(string.utf8.count))
        bytes.append(contentsOf: string.utf8)
    }
}

/// Reads the encoding's primitives, throwing at the end of the bytes or on malformed values.
private struct ByteReader {
    /// The bytes being decoded.
    let buffer: UnsafeBufferPointer<UInt8>
    /// Where the next read starts.
    var offset = 0

    /// A reader at the start of `buffer`.
    init(buffer: UnsafeBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    /// Whether every byte was read.
    var isAtEnd: Bool { offset == buffer.count }

    /// How many bytes are left.
    private var remaining: Int { buffer.count - offset }

    /// One byte.
    mutating func readByte() throws(StoreError) -> UInt8 {
        guard offset < buffer.count else { throw truncated }
        defer { offset += 1 }
        return buffer[offset]
    }

    /// An unsigned LEB128 varint that fits 64 bits.
    mutating func readVarint() throws(StoreError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte()
            guard shift < 63 || (shift == 63 && byte <= 1) else {
                throw StoreError.internal("corrupt revision tree: varint overflow")
            }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    /// A zigzag varint.
    mutating func readSignedVarint() throws(StoreError) -> Int {
        let raw = try readVarint()
        return Int(Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1))))
    }

    /// A count or length; never more than the bytes left, so a corrupt value cannot
    /// make the decoder allocate more than the input's size.
    mutating func readCount() throws(StoreError) -> Int {
        let value = try readVarint()
        guard value <= UInt64(remaining) else { throw truncated }
        return Int(value)
    }

    /// The next `count` bytes, without copying.
    mutating func readBytes(_ count: Int) throws(StoreError) -> UnsafeBufferPointer<UInt8> {
        guard count <= remaining else { throw truncated }
        defer { offset += count }
        return UnsafeBufferPointer(rebasing: buffer[offset..<(offset + count)])
    }

    /// A length-prefixed string; throws on invalid UTF-8.
    mutating func readString() throws(StoreError) -> String {
        let bytes = try readBytes(try readCount())
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw StoreError.internal("corrupt revision tree: invalid UTF-8")
        }
        return string
    }

    /// The error for input that ends early.
    private var truncated: StoreError { .internal("corrupt revision tree: truncated") }
}

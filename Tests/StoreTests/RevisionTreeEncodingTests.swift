import Crypto
import XCTest
@testable import Store

/// The binary form: round trips, compactness, and refusal of damaged bytes.
final class RevisionTreeEncodingTests: XCTestCase {
    private func rev(_ text: String) -> RevisionID { RevisionTreeFixture.revision(text) }

    /// Fails unless decoding `bytes` throws the store's internal error.
    private func assertRejected(_ bytes: [UInt8], _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
        do {
            let tree = try RevisionTree(decoding: bytes)
            XCTFail("decoded \(tree.nodes.count) nodes from bad bytes \(bytes.prefix(40)) \(message)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.kind, .internal, file: file, line: line)
        }
    }

    func testEmptyTreeIsTwoBytes() throws {
        XCTAssertEqual(RevisionTree().encoded(), [RevisionTree.encodingVersion, 0])
        XCTAssertEqual(try RevisionTree(decoding: [1, 0]), RevisionTree())
    }

    func testFirstByteIsTheFormatVersion() {
        var tree = RevisionTree()
        tree.addRevision(rev("1-a"), parent: nil, deleted: false, body: [], attachments: [])
        var bytes = tree.encoded()
        XCTAssertEqual(bytes.first, 1)
        bytes[0] = 2
        assertRejected(bytes)
        assertRejected([])
    }

    func testRandomTreesRoundTrip() throws {
        var random = RevisionTreeFixture.Random(seed: 1)
        for _ in 0..<300 {
            let tree = RevisionTreeFixture.randomTree(size: Int.random(in: 0...60, using: &random), using: &random)
            let bytes = tree.encoded()
            let decoded = try RevisionTree(decoding: bytes)
            XCTAssertEqual(decoded, tree)
            XCTAssertEqual(decoded.encoded(), bytes)
            // A slice that does not start at zero, and a collection with no contiguous storage.
            XCTAssertEqual(try RevisionTree(decoding: ([0xEE] + bytes)[1...]), tree)
            XCTAssertEqual(try RevisionTree(decoding: bytes.lazy.map { $0 }), tree)
        }
    }

    /// Decoding revisions alone (what `_revs_diff` asks) gives the same nodes without bodies, and
    /// the same answers about which revisions are missing; damaged bytes are refused the same way.
    func testRevisionsAloneDecodeWithoutBodies() throws {
        var random = RevisionTreeFixture.Random(seed: 2)
        for _ in 0..<100 {
            let tree = RevisionTreeFixture.randomTree(size: Int.random(in: 0...60, using: &random), using: &random)
            let bytes = tree.encoded()
            let revisions = try bytes.withUnsafeBufferPointer { bytes throws(StoreError) in try RevisionTree(decodingRevisions: bytes) }
            XCTAssertEqual(revisions.nodes.map(\.revision), tree.nodes.map(\.revision))
            XCTAssertEqual(revisions.nodes.map(\.parent), tree.nodes.map(\.parent))
            XCTAssertEqual(revisions.nodes.map(\.deleted), tree.nodes.map(\.deleted))
            XCTAssertTrue(revisions.nodes.allSatisfy { $0.body == nil })
            let asked = tree.nodes.prefix(3).map(\.revision) + [rev("99-ff"), rev("1-00")]
            XCTAssertEqual(revisions.missing(asked).missing, tree.missing(asked).missing)
            XCTAssertEqual(revisions.missing(asked).possibleAncestors, tree.missing(asked).possibleAncestors)
            guard bytes.count > 2 else { continue }
            let cut = Array(bytes.dropLast())
            XCTAssertThrowsError(try cut.withUnsafeBufferPointer { bytes throws(StoreError) in try RevisionTree(decodingRevisions: bytes) }) {
                XCTAssertEqual($0 as? StoreError, .internal("corrupt revision tree: truncated"))
            }
        }
    }

    func testEveryFieldSurvivesTheRoundTrip() throws {
        var tree = RevisionTree()
        let attachments = [
            Attachment(name: "ünïcode name.bin", contentType: "application/octet-stream", length: 0, digest: "md5-1B2M2Y8AsgTpgAmY7PhCfg==",
                       revpos: 1, key: String(repeating: "e3", count: 32)),
            Attachment(name: "", contentType: "", length: Int.max, digest: "", revpos: Int.min, key: ""),
        ]
        let body = Array(#"{"text":"héllo","n":[1,2,3]}"#.utf8) + [0, 255]
        tree.addRevision(rev("1-967a00dff5e02add41819138abb3284d"), parent: nil, deleted: false, body: nil, attachments: [])
        tree.addRevision(rev("2-7051cbe5c8faecd085a3fa619e6e6337"), parent: rev("1-967a00dff5e02add41819138abb3284d"),
                         deleted: true, body: body, attachments: attachments)
        tree.addRevision(rev("2-ABCDEF0123456789abcdef0123456789"), parent: rev("1-967a00dff5e02add41819138abb3284d"),
                         deleted: false, body: [], attachments: [])
        tree.addRevision(rev("1099511627775-~"), parent: nil, deleted: false, body: nil, attachments: [])
        let decoded = try RevisionTree(decoding: tree.encoded())
        XCTAssertEqual(decoded.nodes, tree.nodes)
        XCTAssertEqual(decoded.node(rev("2-7051cbe5c8faecd085a3fa619e6e6337"))?.attachments, attachments)
        XCTAssertEqual(decoded.node(rev("2-7051cbe5c8faecd085a3fa619e6e6337"))?.body, body)
        XCTAssertEqual(decoded.node(rev("2-ABCDEF0123456789abcdef0123456789"))?.body, [])
        XCTAssertNil(decoded.node(rev("1-967a00dff5e02add41819138abb3284d"))?.body)
    }

    /// The shortcut for a new document's first revision writes exactly what
    /// encoding the one-node tree would.
    func testFirstRevisionEncodingMatchesTheOneNodeTree() throws {
        let attachment = Attachment(name: "a.txt", contentType: "text/plain", length: 3, digest: "md5-rL0Y20zC+Fzt72VPzMSk2A==",
                                    revpos: 1, key: String(repeating: "ab", count: 32))
        for (deleted, body, attachments) in [(false, Array(#"{"a":1}"#.utf8), []), (true, [], []), (false, Array("{}".utf8), [attachment])] {
            let digest = Insecure.MD5.hash(data: body + [deleted ? 1 : 0])
            let hex = digest.map { String(format: "%02x", $0) }.joined()
            var tree = RevisionTree()
            tree.addRevision(RevisionID(generation: 1, digest: hex), parent: nil, deleted: deleted, body: body, attachments: attachments)
            let shortcut = RevisionTree.encodedFirstRevision(digest: digest, deleted: deleted, body: body, attachments: attachments)
            XCTAssertEqual(shortcut, tree.encoded())
            XCTAssertEqual(try RevisionTree(decoding: shortcut), tree)
        }
    }

    func testHexDigestsAreStoredAsSixteenBytes() {
        var tree = RevisionTree()
        let history = (1...100).reversed().map { generation in
            RevisionID(generation: generation, digest: String(repeating: String(generation % 10), count: 16) + "0123456789abcdef")
        }
        tree.merge(history: history, deleted: false, body: nil, attachments: [])
        // Per node: flags, generation, parent distance, 16 digest bytes.
        let bytes = tree.encoded()
        XCTAssertLessThanOrEqual(bytes.count, 2 + 100 * 20)
        XCTAssertEqual(try RevisionTree(decoding: bytes), tree)
    }

    func testEveryTruncationIsRejected() {
        var random = RevisionTreeFixture.Random(seed: 2)
        for _ in 0..<40 {
            let tree = RevisionTreeFixture.randomTree(size: Int.random(in: 1...12, using: &random), using: &random)
            let bytes = tree.encoded()
            for length in 0..<bytes.count {
                assertRejected(Array(bytes.prefix(length)), "truncated to \(length)")
            }
        }
    }

    func testTrailingBytesAreRejected() {
        var tree = RevisionTree()
        tree.addRevision(rev("1-a"), parent: nil, deleted: false, body: [1], attachments: [])
        assertRejected(tree.encoded() + [0])
    }

    func testHandMadeCorruptionsAreRejected() throws {
        // A valid two-node tree, written out by hand: 1-a ← 2-b.
        let valid: [UInt8] = [1, 2,
                              0b0000, 1, 1, UInt8(ascii: "a"),
                              0b0010, 2, 1, 1, UInt8(ascii: "b")]
        let tree = try RevisionTree(decoding: valid)
        XCTAssertEqual(tree.history(of: rev("2-b")), [rev("2-b"), rev("1-a")])
        XCTAssertEqual(tree.encoded(), valid)

        func patched(_ offset: Int, _ value: UInt8) -> [UInt8] {
            var bytes = valid
            bytes[offset] = value
            return bytes
        }
        assertRejected(patched(1, 3), "more nodes than present")
        assertRejected([1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0, 1, 1, UInt8(ascii: "a")], "huge node count")
        assertRejected(patched(2, 0b1000_0000), "unknown flag")
        assertRejected(patched(3, 0), "generation zero")
        assertRejected(patched(8, 2), "parent beyond the first node")
        assertRejected(patched(8, 0), "node as its own parent")
        assertRejected(patched(7, 3), "parent two generations older")
        assertRejected(patched(4, 0), "empty digest")
        assertRejected(patched(4, 200), "digest longer than the input")
        assertRejected(patched(5, 0xFF), "digest not UTF-8")
        assertRejected([1, 2, 0, 1, 1, UInt8(ascii: "a"), 0, 1, 1, UInt8(ascii: "a")], "duplicate revision")
        assertRejected([1, 2, 0, 2, 1, UInt8(ascii: "b"), 0, 1, 1, UInt8(ascii: "a")], "out of order")
        assertRejected([1, 1, 0b0100, 1, 1, UInt8(ascii: "a"), 5, 1], "body longer than the input")
        assertRejected([1, 1, 0b1_0000, 1, 1, UInt8(ascii: "a"), 0], "empty attachment list")
        assertRejected([1, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 1, UInt8(ascii: "a")], "varint overflow")
        assertRejected([1, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1, UInt8(ascii: "a")], "generation of 2^42")
    }

    func testRandomDamageNeverCrashes() {
        var random = RevisionTreeFixture.Random(seed: 3)
        var rejected = 0
        for _ in 0..<2000 {
            let tree = RevisionTreeFixture.randomTree(size: Int.random(in: 1...8, using: &random), using: &random)
            var bytes = tree.encoded()
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            if let decoded = try? RevisionTree(decoding: bytes) {
                RevisionTreeFixture.assertValid(decoded)
            } else {
                rejected += 1
            }
        }
        XCTAssertGreaterThan(rejected, 500, "damage outside bodies is detected")
    }

    func testRandomGarbageNeverCrashes() {
        var random = RevisionTreeFixture.Random(seed: 4)
        for _ in 0..<5000 {
            var bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if !bytes.isEmpty, random.next() % 2 == 0 { bytes[0] = 1 }
            if let decoded = try? RevisionTree(decoding: bytes) {
                RevisionTreeFixture.assertValid(decoded)
            }
        }
    }
}

/// Attachments kept gzip-encoded carry their encoding in the tree; trees
/// without such attachments keep the bytes they had before the flag existed.
final class RevisionTreeEncodedAttachmentTests: XCTestCase {
    private func attachment(_ name: String, encoding: AttachmentEncoding?) -> Attachment {
        Attachment(name: name, contentType: "text/plain", length: 17_600, digest: "md5-k7iHDx/iv0T1ssyVDX/ubg==",
                   revpos: 1, key: String(repeating: "ab", count: 32), encoding: encoding)
    }

    func testEncodedAttachmentsRoundTrip() throws {
        var tree = RevisionTree()
        let attachments = [attachment("gz", encoding: AttachmentEncoding(name: "gzip", length: 129)), attachment("plain", encoding: nil)]
        tree.addRevision(RevisionTreeFixture.revision("1-a"), parent: nil, deleted: false, body: [], attachments: attachments)
        let decoded = try RevisionTree(decoding: tree.encoded())
        XCTAssertEqual(decoded, tree)
        XCTAssertEqual(decoded.nodes.first?.attachments.map(\.encoding), [AttachmentEncoding(name: "gzip", length: 129), nil])
        XCTAssertEqual(decoded.nodes.first?.attachments.first?.storedLength, 129)
    }

    func testTreesWithoutEncodedAttachmentsKeepTheirBytes() throws {
        var tree = RevisionTree()
        tree.addRevision(RevisionTreeFixture.revision("1-a"), parent: nil, deleted: false, body: [], attachments: [attachment("plain", encoding: nil)])
        let bytes = tree.encoded()
        // flags: has body, has attachments; no "encoded attachments" bit.
        XCTAssertEqual(bytes[2], 0b1_0100)
        XCTAssertFalse(bytes.contains(Array("gzip".utf8)))
        XCTAssertEqual(try RevisionTree(decoding: bytes), tree)
    }
}

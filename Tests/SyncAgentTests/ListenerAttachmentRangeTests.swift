import Foundation
import Store
@testable import SyncAgent
import XCTest

/// `Range` on attachment GETs, as Apache CouchDB answers it: 206 with the slice
/// read from the attachment's file, several ranges as `multipart/byteranges`, 416
/// with `Content-Range: bytes */LENGTH`, and a header it cannot read ignored
/// (RFC 9110 §14.2), against a real listener on loopback.
final class ListenerAttachmentRangeTests: XCTestCase {
    /// A random attachment of 5 MiB and a bit (not a multiple of the 64 KiB read size).
    private static let content: [UInt8] = {
        var generator = SystemRandomNumberGenerator()
        return (0..<(5 << 20) + 12_345).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }()

    /// A listener with `db/doc/video.bin` holding ``content``; returns the attachment's URL.
    private func attachmentURL() async throws -> String {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        let put = try await HTTP.request(.PUT, server.url + "/db/doc/video.bin", body: Self.content,
                                         headers: [("Content-Type", "application/octet-stream")])
        XCTAssertEqual(put.status, 201, put.text)
        return server.url + "/db/doc/video.bin"
    }

    private func get(_ url: String, range: String?) async throws -> HTTPAnswer {
        try await HTTP.request(.GET, url, headers: range.map { [("Range", $0)] } ?? [])
    }

    func testSingleRangesAreByteExactSlicesWithTheirContentRange() async throws {
        let url = try await attachmentURL()
        let length = Self.content.count
        let whole = try await get(url, range: nil)
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(whole.header("Accept-Ranges"), "bytes")
        XCTAssertTrue(whole.body == Self.content)

        // (header, first byte, last byte): across read-size boundaries, open-ended, suffixes, clamped ends.
        let cases: [(String, Int, Int)] = [
            ("bytes=0-0", 0, 0),
            ("bytes=1000000-3500000", 1_000_000, 3_500_000),
            ("bytes=65535-65536", 65_535, 65_536),
            ("bytes=4000000-", 4_000_000, length - 1),
            ("bytes=-100", length - 100, length - 1),
            ("bytes=-1", length - 1, length - 1),
            ("bytes=\(length - 10)-\(length + 1_000_000)", length - 10, length - 1),
            ("bytes=\(length - 1)-\(length - 1)", length - 1, length - 1),
            ("bytes=-\(length * 2)", 0, length - 1),
            ("bytes=1-99999999999999999999999", 1, length - 1),
            ("Bytes=10-19", 10, 19),
        ]
        for (header, first, last) in cases {
            let answer = try await get(url, range: header)
            XCTAssertEqual(answer.status, 206, header)
            XCTAssertEqual(answer.header("Content-Range"), "bytes \(first)-\(last)/\(length)", header)
            XCTAssertEqual(answer.header("Content-Length"), String(last - first + 1), header)
            XCTAssertEqual(answer.header("Content-Type"), "application/octet-stream", header)
            XCTAssertEqual(answer.header("Accept-Ranges"), "bytes", header)
            XCTAssertTrue(answer.body == Array(Self.content[first...last]), "\(header): \(answer.body.count) bytes")
        }
    }

    func testUnsatisfiableRangesAnswer416WithTheLength() async throws {
        let url = try await attachmentURL()
        let length = Self.content.count
        for header in ["bytes=\(length)-", "bytes=\(length)-\(length + 10)", "bytes=5-3", "bytes=-0", "bytes=0-9,\(length + 5)-"] {
            let answer = try await get(url, range: header)
            XCTAssertEqual(answer.status, 416, header)
            XCTAssertEqual(answer.header("Content-Range"), "bytes */\(length)", header)
            XCTAssertEqual(answer.json["error"], "requested_range_not_satisfiable", header)
        }
    }

    func testRangesThatCannotBeReadOrThatAskForAllGetTheWholeAttachment() async throws {
        let url = try await attachmentURL()
        // Invalid syntax or another unit: ignored (RFC 9110). `0-` anywhere, or ten ranges: the whole, as CouchDB sends it.
        let ignored = ["bytes=abc", "bytes=1-2-3", "bytes=1 - 2", "bytes=", "bytes=--5", "bytes=5", "bytes=1-2,,3-4", "items=0-10", "0-10",
                       "bytes=0-", "bytes=10-20,0-",
                       "bytes=" + (0..<10).map { "\($0 * 10)-\($0 * 10 + 1)" }.joined(separator: ",")]
        for header in ignored {
            let answer = try await get(url, range: header)
            XCTAssertEqual(answer.status, 200, header)
            XCTAssertNil(answer.header("Content-Range"), header)
            XCTAssertTrue(answer.body == Self.content, header)
        }
    }

    func testSeveralRangesComeAsMultipartByteranges() async throws {
        let url = try await attachmentURL()
        let length = Self.content.count
        let answer = try await get(url, range: "bytes=0-9,3000000-3999999,-5")
        XCTAssertEqual(answer.status, 206)
        let type = try XCTUnwrap(answer.header("Content-Type"))
        let boundary = try XCTUnwrap(type.firstMatch(of: /^multipart\/byteranges; boundary="([^"]+)"$/)?.1)
        XCTAssertEqual(answer.header("Content-Length"), String(answer.body.count))
        // CouchDB's layout: --B, then per range CRLF, its headers, CRLF CRLF, the bytes, CRLF --B; last "--".
        var expected = Array("--\(boundary)".utf8)
        for (first, last) in [(0, 9), (3_000_000, 3_999_999), (length - 5, length - 1)] {
            expected += Array("\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes \(first)-\(last)/\(length)\r\n\r\n".utf8)
            expected += Self.content[first...last]
            expected += Array("\r\n--\(boundary)".utf8)
        }
        expected += Array("--".utf8)
        XCTAssertTrue(answer.body == expected, "a multipart/byteranges body of \(answer.body.count) bytes, not the expected \(expected.count)")
    }

    /// The slice is read at its offset: the process reads far fewer bytes than the attachment holds.
    func testARangeReadsOnlyItsSliceOfTheFile() async throws {
        let url = try await attachmentURL()
        let before = try Self.bytesRead()
        let answer = try await get(url, range: "bytes=2500000-2500099")
        let read = try Self.bytesRead() - before
        XCTAssertEqual(answer.status, 206)
        XCTAssertTrue(answer.body == Array(Self.content[2_500_000...2_500_099]))
        XCTAssertLessThan(read, 1 << 20, "the process read \(read) bytes to send 100")
    }

    /// This process's `rchar`: bytes passed through read calls (files and sockets).
    private static func bytesRead() throws -> Int {
        let io = try String(contentsOfFile: "/proc/self/io", encoding: .utf8)
        let line = try XCTUnwrap(io.split(separator: "\n").first { $0.hasPrefix("rchar:") })
        return try XCTUnwrap(Int(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces)))
    }

    func testRangeHeaderParsing() {
        XCTAssertEqual(ByteRanges(header: nil, length: 10), .whole)
        XCTAssertEqual(ByteRanges(header: "bytes=0-0", length: 0), .unsatisfiable)
        XCTAssertEqual(ByteRanges(header: "bytes=-5", length: 0), .unsatisfiable)
        XCTAssertEqual(ByteRanges(header: "bytes=0-", length: 0), .whole)
        XCTAssertEqual(ByteRanges(header: "bytes=2-4, 6-", length: 10), .parts([2...4, 6...9]))
        XCTAssertEqual(ByteRanges(header: "bytes=-3", length: 10), .parts([7...9]))
        XCTAssertEqual(ByteRanges(header: "bytes=٣-٤", length: 10), .whole, "only ASCII digits")
        XCTAssertEqual(ByteRanges(header: "bytes=+1-2", length: 10), .whole)
    }
}

import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
@testable import SyncAgent
import XCTest

/// A 1 GiB attachment goes into the listener and comes out again while the
/// process's resident memory barely moves: the bytes stream to a staged file as
/// they arrive and back from it, never held whole (issue 20).
final class ListenerLargeAttachmentTests: XCTestCase {
    func testAGibibyteAttachmentIsPutAndReadBackInBoundedMemory() async throws {
        // Under ThreadSanitizer, 64 MiB: the pass looks for races, and RSS is no measure there.
        let size = MemoryBound.underSanitizer ? 64 << 20 : 1 << 30
        let directory = try TemporaryDirectory(prefix: "syncd-large")
        addTeardownBlock { directory.remove() }
        let file = directory.path + "/movie.bin"
        var md5 = Insecure.MD5()
        do {
            XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            var block = [UInt8](repeating: 0, count: 1 << 20)
            var generator = SystemRandomNumberGenerator()
            for index in stride(from: 0, to: block.count, by: 8) {
                withUnsafeBytes(of: generator.next() as UInt64) { block.replaceSubrange(index..<index + 8, with: $0) }
            }
            for megabyte in 0..<(size >> 20) {
                withUnsafeBytes(of: megabyte) { block.replaceSubrange(0..<$0.count, with: $0) }  // no two alike
                md5.update(data: block)
                try handle.write(contentsOf: block)
            }
            try handle.close()
        }
        let digest = "md5-" + Data(md5.finalize()).base64EncodedString()
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)

        try MemoryBound.resetPeak()
        let before = try MemoryBound.current()
        var put = HTTP.makeRequest(.PUT, server.url + "/db/film/movie.bin", headers: [("Content-Type", "video/mp4")])
        put.body = .stream(MultipartSegmentChunks(segments: [.file(path: file, length: size)]), length: .known(Int64(size)))
        let stored = try await HTTPClient.shared.execute(put, timeout: .minutes(10))
        XCTAssertEqual(stored.status.code, 201)
        _ = try await stored.body.collect(upTo: 1 << 20)
        let attachment = try server.catalog.database("db").attachment(documentID: "film", name: "movie.bin")
        XCTAssertEqual(attachment.digest, digest)
        XCTAssertEqual(attachment.length, size)

        let read = try await HTTPClient.shared.execute(HTTP.makeRequest(.GET, server.url + "/db/film/movie.bin"), timeout: .minutes(10))
        XCTAssertEqual(read.status.code, 200)
        XCTAssertEqual(read.headers.first(name: "Content-Length"), String(size))
        var readBack = Insecure.MD5()
        var length = 0
        for try await chunk in read.body {
            chunk.withUnsafeReadableBytes { readBack.update(bufferPointer: $0) }
            length += chunk.readableBytes
        }
        XCTAssertEqual(length, size)
        XCTAssertEqual("md5-" + Data(readBack.finalize()).base64EncodedString(), digest)

        guard !MemoryBound.underSanitizer else { return }
        let growth = try MemoryBound.peak() - before
        XCTAssertLessThan(growth, 64 << 20, "peak RSS grew by \(growth >> 20) MiB moving 1 GiB in and out")
    }
}

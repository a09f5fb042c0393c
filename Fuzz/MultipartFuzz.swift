import Dispatch
import NIOCore

/// libFuzzer entry: the input is a multipart body (boundary `b`) fed in chunks
/// of a size taken from its first byte. Every part is read whole (each bounded
/// to 1 MiB); a malformed body must be an error, never a crash or a hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMultipartReader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let chunkSize = Int(data[0]) + 1
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let chunks = AsyncStream<ByteBuffer> { continuation in
        var offset = 0
        while offset < bytes.count {
            continuation.yield(ByteBuffer(bytes: bytes[offset..<min(offset + chunkSize, bytes.count)]))
            offset += chunkSize
        }
        continuation.finish()
    }
    let done = DispatchSemaphore(value: 0)
    Task {
        let reader = MultipartReader(boundary: "b", body: chunks, maximumParts: 100)
        while (try? await reader.nextPart()) != nil {
            guard (try? await reader.readBody(limit: 1 << 20)) != nil else { break }
        }
        done.signal()
    }
    done.wait()
    return 0
}

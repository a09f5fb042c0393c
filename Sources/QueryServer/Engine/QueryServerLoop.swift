import Dispatch
import Glibc
import Locking

/// The query server process's whole life: read a command line from standard input, answer it
/// on standard output, until standard input ends. What `syncd query-server` runs, and what
/// ``QueryProcess`` starts and talks to; a command that never finishes is the parent's to stop.
public enum QueryServerLoop {
    /// The heap's ceiling by default: room for the largest document (8 MB of JSON is about
    /// ten times that as JavaScript values) and what functions build from it.
    public static let defaultMemoryLimit = 256 << 20

    /// The longest an answer waits for the ones after it to go out together.
    static let flushInterval = Duration.milliseconds(20)

    /// Serves commands on `input` and `output` until `input` ends; returns the exit status.
    public static func run(input: Int32 = 0, output: Int32 = 1, memoryLimit: Int = defaultMemoryLimit) -> Int32 {
        let heap: JavaScriptHeap
        do {
            heap = try JavaScriptHeap(memoryLimit: memoryLimit)
            try heap.evaluate(Prelude.source)
        } catch {
            report("cannot start the JavaScript engine: \(error)")
            return 70
        }
        var lines = LineReader(descriptor: input)
        // Answers go out together when the commands come together (the parent sends a batch at
        // once): written when no command waits, or by the watchdog once held `flushInterval`,
        // whatever the command running then does, since the parent times each answer.
        let answers = HeldAnswers(output: output)
        DetachedThread.start(name: "answer-flusher") { answers.flushWhenHeld(for: flushInterval) }
        while let line = lines.next() {
            var answer: [UInt8]
            do {
                answer = try heap.call("__syncd_answer", with: line)
            } catch {
                // Past the prelude's own handling (a RangeError while handling one, say).
                answer = Array(#"["error","\#(error.name)","\#(error.message.filter { $0 != "\"" && $0 != "\\" && $0 != "\n" })"]"#.utf8)
            }
            answer.append(UInt8(ascii: "\n"))
            answers.hold(answer)
            if !lines.hasWholeLine { guard answers.flush() else { return 74 } }
        }
        return answers.flush() ? 0 : 74
    }

    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    private static func report(_ message: String) {
        let text = "syncd query server: \(message)\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
    }
}

/// Answers written but not yet sent, and the watchdog that sends them once held too long.
final class HeldAnswers: Sendable {
    private let output: Int32
    private let held = Locked<[UInt8]>([])
    /// Signalled when answers are held where none were.
    private let arrived = DispatchSemaphore(value: 0)

    init(output: Int32) { self.output = output }

    func hold(_ answer: [UInt8]) {
        let first = held.withLock { held in
            defer { held += answer }
            return held.isEmpty
        }
        if first { arrived.signal() }
    }

    /// Sends what is held; false when the output is gone.
    @discardableResult
    func flush() -> Bool {
        held.withLock { held in
            defer { held.removeAll(keepingCapacity: true) }
            return held.isEmpty || QueryServerLoop.writeAll(held, to: output)
        }
    }

    /// Forever: once answers are held, waits `interval` and sends them. Sleeps while none are.
    func flushWhenHeld(for interval: Duration) {
        let microseconds = UInt32(interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
        while true {
            arrived.wait()
            usleep(microseconds)
            flush()
        }
    }
}

/// Lines from a descriptor, without their newline, read in large blocks.
struct LineReader {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where the search for the next newline goes on: what is before it holds none.
    private var scanned = 0
    private var ended = false

    init(descriptor: Int32) { self.descriptor = descriptor }

    /// Whether a whole line is read already, so ``next()`` returns without waiting.
    var hasWholeLine: Bool { buffer[start...].contains(UInt8(ascii: "\n")) }

    mutating func next() -> [UInt8]? {
        while true {
            if let newline = buffer[scanned...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                scanned = start
                return line
            }
            scanned = buffer.count
            if ended {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                scanned = start
                return line
            }
            if start > 0 {
                buffer.removeFirst(start)
                scanned -= start
                start = 0
            }
            var block = [UInt8](repeating: 0, count: 1 << 16)
            let count = block.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                ended = true
            } else if count == 0 {
                ended = true
            } else {
                buffer.append(contentsOf: block[..<count])
            }
        }
    }
}

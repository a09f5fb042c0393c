import CPCRE2
import JSON

/// A `$regex` pattern, compiled once by PCRE2 and searched (unanchored, like
/// `re:run` in CouchDB, whose regular expressions are PCRE's) in many strings.
///
/// Patterns are compiled to machine code (PCRE2's JIT) where the platform allows.
/// PCRE2 backtracks, so a pattern such as `(a|a)*$` takes time exponential in the
/// string's length: a search stops after a number of backtracking steps from one
/// starting position (or when it needs more than its stack or ``heapLimit``) and
/// counts as no match, as CouchDB's does when Erlang's `re` gives up. PCRE2 counts
/// steps per starting position, so a string of n characters may take n times the
/// limit: the limit shrinks as strings grow (``stepLimits``), keeping a search
/// to about ``stepBudget`` steps (a few tenths of a second) down to a floor of 100
/// steps per position for strings past a megabyte.
final class RegexPattern: Sendable {
    /// The pattern as written.
    let pattern: String
    /// The compiled pattern and the limits: both only read once made, which PCRE2 allows from any thread.
    private nonisolated(unsafe) let code: OpaquePointer
    /// One match context per entry of ``stepLimits``.
    private nonisolated(unsafe) let contexts: [OpaquePointer]

    /// Backtracking steps a whole search should stay near.
    static let stepBudget = 100_000_000
    /// Backtracking steps a search may take from one starting position, by the longest string
    /// (in bytes) that limit applies to: `stepBudget` divided by the length, from 100,000
    /// (PCRE2's default is 10,000,000) down to 100.
    static let stepLimits: [(longest: Int, steps: UInt32)] = [(1_000, 100_000), (10_000, 10_000), (100_000, 1_000), (.max, 100)]
    /// Nested backtracking points a search may hold (the interpreter's; JIT code has its own stack limit).
    static let depthLimit: UInt32 = 10_000
    /// Memory one search may use for backtracking, in KiB.
    static let heapLimit: UInt32 = 8 << 10

    init(_ pattern: String) throws(StoreError) {
        var errorCode: Int32 = 0
        var errorOffset = 0
        let compiled = Self.withBytes(pattern) { bytes, count in
            pcre2_compile_8(bytes, count, PCRE2_UTF, &errorCode, &errorOffset, nil)
        }
        guard let compiled else {
            var message = [UInt8](repeating: 0, count: 256)
            let length = pcre2_get_error_message_8(errorCode, &message, message.count)
            let reason = length > 0 ? String(decoding: message[..<Int(length)], as: UTF8.self) : "invalid pattern"
            throw StoreError(.badRequest, error: "bad_arg",
                             reason: "Bad argument for operator $regex: \(JSON.string(pattern).serialized()): \(reason) at offset \(errorOffset)")
        }
        _ = pcre2_jit_compile_8(compiled, UInt32(PCRE2_JIT_COMPLETE))  // where it fails, the interpreter runs the same pattern
        var contexts: [OpaquePointer] = []
        for (_, steps) in Self.stepLimits {
            guard let context = pcre2_match_context_create_8(nil) else {
                contexts.forEach { pcre2_match_context_free_8($0) }
                pcre2_code_free_8(compiled)
                throw StoreError.internal("out of memory compiling $regex")
            }
            pcre2_set_match_limit_8(context, steps)
            pcre2_set_depth_limit_8(context, Self.depthLimit)
            pcre2_set_heap_limit_8(context, Self.heapLimit)
            contexts.append(context)
        }
        self.code = compiled
        self.contexts = contexts
        self.pattern = pattern
    }

    deinit {
        pcre2_code_free_8(code)
        contexts.forEach { pcre2_match_context_free_8($0) }
    }

    /// Whether the pattern occurs anywhere in `string`; a search that reaches a limit is no match.
    func matches(_ string: String) -> Bool {
        guard let data = pcre2_match_data_create_from_pattern_8(code, nil) else { return false }
        defer { pcre2_match_data_free_8(data) }
        // Swift strings are valid UTF-8: PCRE2 need not check them again.
        return Self.withBytes(string) { bytes, count in
            let context = contexts[Self.stepLimits.firstIndex { count <= $0.longest } ?? contexts.count - 1]
            return pcre2_match_8(code, bytes, count, 0, PCRE2_NO_UTF_CHECK, data, context)
        } >= 0
    }

    /// The UTF-8 bytes of `text`, never a null pointer (PCRE2 refuses one even for no bytes).
    private static func withBytes<T>(_ text: String, _ body: (UnsafePointer<UInt8>, Int) -> T) -> T {
        var text = text
        return text.withUTF8 { buffer in
            if let base = buffer.baseAddress { return body(base, buffer.count) }
            var nothing: UInt8 = 0
            return body(&nothing, 0)
        }
    }
}

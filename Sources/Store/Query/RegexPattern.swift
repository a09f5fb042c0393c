import CPCRE2

/// A `$regex` pattern, compiled once by PCRE2 and searched (unanchored, like
/// `re:run` in CouchDB, whose regular expressions are PCRE's) in many strings.
///
/// Patterns are compiled to machine code (PCRE2's JIT) where the platform allows.
/// PCRE2 backtracks, so a pattern such as `(a|a)*$` takes time exponential in the
/// string's length: a search stops after ``matchLimit`` backtracking steps from one
/// starting position (or when it needs more than its stack or ``heapLimit``) and
/// counts as no match, as CouchDB's does when Erlang's `re` gives up. The limit is
/// PCRE2's, per starting position, so a string of n characters costs at most about
/// n times that (a 1 MB string against `(?:a|a){0,12}(?=!)`: ~20 s of one core).
final class RegexPattern: Sendable {
    /// The pattern as written.
    let pattern: String
    /// The compiled pattern and the limits: both only read once made, which PCRE2 allows from any thread.
    private nonisolated(unsafe) let code: OpaquePointer
    private nonisolated(unsafe) let context: OpaquePointer

    /// Backtracking steps a search may take from one starting position (PCRE2's default is 10,000,000).
    static let matchLimit: UInt32 = 100_000
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
        guard let context = pcre2_match_context_create_8(nil) else {
            pcre2_code_free_8(compiled)
            throw StoreError.internal("out of memory compiling $regex")
        }
        _ = pcre2_jit_compile_8(compiled, UInt32(PCRE2_JIT_COMPLETE))  // where it fails, the interpreter runs the same pattern
        pcre2_set_match_limit_8(context, Self.matchLimit)
        pcre2_set_depth_limit_8(context, Self.depthLimit)
        pcre2_set_heap_limit_8(context, Self.heapLimit)
        self.code = compiled
        self.context = context
        self.pattern = pattern
    }

    deinit {
        pcre2_code_free_8(code)
        pcre2_match_context_free_8(context)
    }

    /// Whether the pattern occurs anywhere in `string`; a search that reaches a limit is no match.
    func matches(_ string: String) -> Bool {
        guard let data = pcre2_match_data_create_from_pattern_8(code, nil) else { return false }
        defer { pcre2_match_data_free_8(data) }
        // Swift strings are valid UTF-8: PCRE2 need not check them again.
        return Self.withBytes(string) { bytes, count in
            pcre2_match_8(code, bytes, count, 0, PCRE2_NO_UTF_CHECK, data, context)
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

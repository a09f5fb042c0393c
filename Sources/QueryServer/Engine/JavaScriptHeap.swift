import CDuktape
import Glibc

/// One Duktape heap whose allocations stop at a ceiling: what a query server process runs
/// design documents' functions in. Allocation past the ceiling fails inside the engine, which
/// throws a JavaScript `RangeError` the prelude answers as the function's error; a function that
/// never returns is the parent's to stop (``QueryProcess`` kills the process).
///
/// Used on one thread, the process's only one, and never shared.
final class JavaScriptHeap {
    private let context: OpaquePointer
    private let budget: UnsafeMutablePointer<MemoryBudget>

    /// What the heap may hold, and holds now, in bytes.
    struct MemoryBudget {
        var limit: Int
        var used = 0
    }

    /// A heap with `memoryLimit` bytes to allocate; fails when the engine cannot start.
    init(memoryLimit: Int) throws(JavaScriptError) {
        budget = .allocate(capacity: 1)
        budget.initialize(to: MemoryBudget(limit: memoryLimit))
        guard let context = duk_create_heap(Self.allocate, Self.reallocate, Self.free, budget, Self.fatal) else {
            budget.deallocate()
            throw JavaScriptError(name: "engine_error", message: "cannot create a JavaScript heap")
        }
        self.context = context
    }

    deinit {
        duk_destroy_heap(context)
        budget.deallocate()
    }

    /// Runs `source` as global code, for its definitions.
    func evaluate(_ source: String) throws(JavaScriptError) {
        let flags = UInt32(DUK_COMPILE_EVAL | DUK_COMPILE_SAFE | DUK_COMPILE_NOSOURCE | DUK_COMPILE_NOFILENAME | DUK_COMPILE_NORESULT)
        let status = source.utf8CString.withUnsafeBufferPointer { text in
            duk_eval_raw(context, text.baseAddress, text.count - 1, flags)
        }
        if status != 0 {
            let error = JavaScriptError(name: "compilation_error", message: message(at: -1))
            duk_pop(context)
            throw error
        }
    }

    /// Calls the global function `name` with one string, which must answer a string: how the
    /// query server loop hands each command line to the prelude and takes its answer back.
    func call(_ name: String, with argument: [UInt8]) throws(JavaScriptError) -> [UInt8] {
        guard duk_get_global_string(context, name) != 0 else {
            duk_pop(context)
            throw JavaScriptError(name: "engine_error", message: "\(name) is not defined")
        }
        argument.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { _ = duk_push_lstring(context, $0.baseAddress, $0.count) }
        }
        defer { duk_pop(context) }
        guard duk_pcall(context, 1) == 0 else {
            throw JavaScriptError(name: "runtime_error", message: message(at: -1))
        }
        var length = 0
        guard let text = duk_get_lstring(context, -1, &length) else {
            throw JavaScriptError(name: "engine_error", message: "\(name) answered no string")
        }
        return text.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    /// The value at `index` as text, whatever it is (an error's message included).
    private func message(at index: Int32) -> String {
        var length = 0
        guard let text = duk_safe_to_lstring(context, index, &length) else { return "unknown error" }
        return text.withMemoryRebound(to: UInt8.self, capacity: length) { String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self) }
    }

    // MARK: - Allocation within the budget

    /// Each block carries its size in a header before it, so a free or a realloc knows what it returns.
    private static let header = 16

    private static let allocate: duk_alloc_function = { udata, size in
        guard let budget = udata?.assumingMemoryBound(to: MemoryBudget.self) else { return nil }
        return reserve(size, replacing: nil, in: budget)
    }

    private static let reallocate: duk_realloc_function = { udata, pointer, size in
        guard let budget = udata?.assumingMemoryBound(to: MemoryBudget.self) else { return nil }
        if size == 0 {
            release(pointer, in: budget)
            return nil
        }
        return reserve(size, replacing: pointer, in: budget)
    }

    private static let free: duk_free_function = { udata, pointer in
        guard let budget = udata?.assumingMemoryBound(to: MemoryBudget.self) else { return }
        release(pointer, in: budget)
    }

    private static func reserve(_ size: Int, replacing pointer: UnsafeMutableRawPointer?, in budget: UnsafeMutablePointer<MemoryBudget>) -> UnsafeMutableRawPointer? {
        let base = pointer.map { $0 - header }
        let old = base.map { $0.load(as: Int.self) } ?? 0
        guard budget.pointee.used - old + size <= budget.pointee.limit else { return nil }
        guard let block = Glibc.realloc(base, size + header) else { return nil }
        block.storeBytes(of: size, as: Int.self)
        budget.pointee.used += size - old
        return block + header
    }

    private static func release(_ pointer: UnsafeMutableRawPointer?, in budget: UnsafeMutablePointer<MemoryBudget>) {
        guard let pointer else { return }
        let base = pointer - header
        budget.pointee.used -= base.load(as: Int.self)
        Glibc.free(base)
    }

    /// The engine cannot go on (its own invariants failed): the process says so and ends; the
    /// parent sees the end and starts another.
    private static let fatal: duk_fatal_function = { _, message in
        let text = "syncd query server: fatal JavaScript engine error: \(message.map { String(cString: $0) } ?? "unknown")\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
        _exit(70)
    }
}

/// A failure of the engine itself or of code it runs, by name and message.
struct JavaScriptError: Error, CustomStringConvertible {
    let name: String
    let message: String
    var description: String { "\(name): \(message)" }
}

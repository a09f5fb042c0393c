import JSON

/// libFuzzer entry: the input's first byte picks the splitter's limit (0 to 191 bytes, or
/// none), its second how the rest, a `_bulk_get` answer, is cut into chunks (see
/// `chunks(of:seed:)`). Fed whole, in those chunks and a byte at a time, the answer is
/// accepted with the same elements every time, or refused every time (a reading that fails
/// having given a prefix of the bytewise elements). And any answer the JSON parser reads,
/// serialized and fed in those chunks, gives exactly its `results`, element by element, if
/// it is an object whose `results` is an array, and is refused otherwise.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResultsSplitter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let limit = data[0] < 192 ? Int(data[0]) : Int.max
    let answer = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))[...]
    let whole = split([answer], limit: limit)
    let chunked = split(chunks(of: answer, seed: data[1]), limit: limit)
    let bytewise = split(answer.indices.map { answer[$0...$0] }, limit: limit)
    for (name, reading) in [("chunked", chunked), ("bytewise", bytewise)] {
        guard reading.failed == whole.failed else { fatalError("\(name) failed \(reading.failed), whole \(whole.failed)") }
        guard reading.failed ? bytewise.elements.starts(with: reading.elements) : reading.elements == whole.elements else {
            fatalError("\(name) gave \(reading.elements.count) elements, whole \(whole.elements.count)")
        }
    }
    guard let value = try? JSON(parsing: answer) else { return 0 }
    let text = value.serializedBytes()[...]
    let reading = split(chunks(of: text, seed: data[1]), limit: Int.max)
    if case .object(let object) = value, case .array(let results)? = object["results"] {
        guard !reading.failed, reading.elements == results.map({ $0.serializedBytes() }) else {
            fatalError("the results of \(String(decoding: text, as: UTF8.self)) split as \(reading)")
        }
    } else {
        guard reading.failed else { fatalError("accepted \(String(decoding: text, as: UTF8.self))") }
    }
    return 0
}

/// What a splitter made of an answer: the elements it gave, and whether it refused the answer.
private struct Reading {
    var elements: [[UInt8]] = []
    var failed = false
}

/// Feeds `chunks` to a splitter, then ends the answer.
private func split(_ chunks: [ArraySlice<UInt8>], limit: Int) -> Reading {
    var splitter = ResultsSplitter(limit: limit)
    var reading = Reading()
    do {
        for chunk in chunks { reading.elements += try splitter.elements(in: chunk) }
        try splitter.finish()
    } catch {
        reading.failed = true
    }
    return reading
}

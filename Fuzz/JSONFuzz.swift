/// libFuzzer entry: any bytes given to the JSON parser either parse or throw
/// (never crash, never take long); what parses serializes to JSON that parses
/// back and serializes to the same text, as revision ids (digests of that
/// text) need on every peer. (The value may change form: `-1E16` parses as a
/// double and comes back as an exact big integer of the same value.)
///
/// The same bytes go to ``JSONReader``, as a changes feed's rows do: read whole
/// (`value()`), it accepts exactly what the parser accepts and builds the same
/// value; walked part by part (members, elements, strings, literals, text, skips,
/// strings in place, chosen by the input's own bytes), it never crashes and accepts
/// all the parser does, and a member's name matches a literal exactly when its text is it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let parsed = try? JSON(parsing: bytes)
    let read = try? JSONReader.read(bytes) { reader in try reader.value() }
    guard read == parsed else {
        fatalError("JSONReader read \(String(describing: read)) where the parser gave \(String(describing: parsed))")
    }
    var walk = ReaderWalk(choices: bytes)
    let walked = (try? JSONReader.read(bytes) { reader in try walk.visit(&reader) }) != nil
    if parsed != nil, !walked {
        fatalError("JSONReader refused, walked part by part, what the parser accepts")
    }
    guard let value = parsed else { return 0 }
    let text = value.serializedBytes()
    guard let again = try? JSON(parsing: text) else {
        fatalError("serialized JSON does not parse: \(String(decoding: text, as: UTF8.self))")
    }
    let textAgain = again.serializedBytes()
    guard textAgain == text else {
        fatalError("\(String(decoding: text, as: UTF8.self)) serializes as \(String(decoding: textAgain, as: UTF8.self)) once parsed")
    }
    return 0
}

/// Walks a value with ``JSONReader``, picking at each value what to ask for from the next
/// byte of `choices` (the input itself), so one input covers many ways of reading it.
private struct ReaderWalk {
    let choices: UnsafeBufferPointer<UInt8>
    var next = 0

    /// Recurses as deep as the input nests: the reader's own depth limit bounds it.
    mutating func visit(_ reader: inout JSONReader) throws {
        let choice = choices.isEmpty ? 0 : Int(choices[next % choices.count]) % 8
        next += 1
        switch choice {
        case 0:
            _ = try reader.members { name, member in
                guard name == "seq" ? name.description == "seq" : name.description != "seq",
                      name == "é" ? name.description == "é" : name.description != "é"
                else { fatalError("the name \(name) matched a literal it is not, or missed the one it is") }
                try self.visit(&member)
            }
        case 1: _ = try reader.elements { element in try self.visit(&element) }
        case 2: _ = try reader.string()
        case 3: _ = try reader.bool()
        case 4: _ = try reader.text()
        case 5: try reader.skip()
        case 6:
            if let text = reader.asciiString(),
               !text.allSatisfy({ $0 >= 0x20 && $0 < 0x80 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
                fatalError("a string in place holds \(Array(text)), not printable ASCII without escapes")
            }
        default: _ = try reader.value()
        }
    }
}

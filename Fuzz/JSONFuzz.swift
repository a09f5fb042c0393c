/// libFuzzer entry: any bytes given to the JSON parser either parse or throw
/// (never crash, never take long); what parses serializes to JSON that parses
/// back and serializes to the same text, as revision ids (digests of that
/// text) need on every peer. (The value may change form: `-1E16` parses as a
/// double and comes back as an exact big integer of the same value.)
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let value = try? JSON(parsing: UnsafeBufferPointer(start: data, count: size)) else { return 0 }
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

/// libFuzzer entry: any bytes given to the JSON parser either parse or throw
/// (never crash, never take long); what parses serializes to JSON that parses
/// back to the same value.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let value = try? JSON(parsing: UnsafeBufferPointer(start: data, count: size)) else { return 0 }
    let text = value.serializedBytes()
    guard let again = try? JSON(parsing: text) else {
        fatalError("serialized JSON does not parse: \(String(decoding: text, as: UTF8.self))")
    }
    guard again == value else { fatalError("round trip changed \(value) into \(again)") }
    return 0
}

/// Reads JSON text one value at a time, for callers that know the shape they expect and
/// want only part of it built. A changes feed's rows are read this way: thousands arrive
/// a second, and most of each row (its `doc`) is never needed.
///
/// Every method reads the value at the reading position whole. A value that is not of
/// the kind asked for is skipped and answered with `nil` (or `false`). The text is checked
/// as ``JSON/init(parsing:)`` checks it, except values skipped or taken as ``text()``:
/// their brackets, strings and literals are checked, their escapes and UTF-8 are not.
///
/// ```swift
/// var id: String?
/// try JSONReader.read(line) { row in
///     _ = try row.members { name, value in
///         if name == "id" { id = try value.string() }  // a member not read is skipped
///     }
/// }
/// ```
public struct JSONReader: ~Copyable {
    private var parser: JSONParser

    private init(_ parser: JSONParser) { self.parser = parser }

    /// Reads `bytes`, which must hold one JSON value and nothing but whitespace around it.
    /// What `body` leaves unread of the value is skipped.
    public static func read<Bytes: Collection<UInt8>, Result>(_ bytes: Bytes, _ body: (inout JSONReader) throws -> Result) throws -> Result {
        if let result = try bytes.withContiguousStorageIfAvailable({ buffer in try read(buffer, body) }) { return result }
        return try Array(bytes).withUnsafeBufferPointer { buffer in try read(buffer, body) }
    }

    private static func read<Result>(_ buffer: UnsafeBufferPointer<UInt8>, _ body: (inout JSONReader) throws -> Result) throws -> Result {
        var reader = JSONReader(JSONParser(buffer))
        reader.parser.skipWhitespace()
        let start = reader.parser.index
        let result = try body(&reader)
        if reader.parser.index == start { try reader.parser.skipValue() }
        try reader.parser.finish()
        return result
    }

    /// The value, built.
    public mutating func value() throws(JSONSyntaxError) -> JSON {
        try parser.parseValue()
    }

    /// The value if it is a string.
    public mutating func string() throws(JSONSyntaxError) -> String? {
        guard parser.next == UInt8(ascii: "\"") else { try parser.skipValue(); return nil }
        return try parser.parseString()
    }

    /// The value's characters if it is a string of printable ASCII without escapes (a revision
    /// id, say), in place: valid only inside the ``read(_:_:)`` that made this reader, and not
    /// copied. Nil, the value left to be read another way, for anything else.
    public mutating func asciiString() -> UnsafeBufferPointer<UInt8>? {
        parser.asciiString()
    }

    /// The value if it is `true` or `false`.
    public mutating func bool() throws(JSONSyntaxError) -> Bool? {
        switch parser.next {
        case UInt8(ascii: "t"): try parser.expect("true"); return true
        case UInt8(ascii: "f"): try parser.expect("false"); return false
        default: try parser.skipValue(); return nil
        }
    }

    /// The value's JSON text as it came, unparsed.
    public mutating func text() throws(JSONSyntaxError) -> [UInt8] {
        let start = parser.index
        try parser.skipValue()
        return Array(parser.bytes[start..<parser.index])
    }

    /// Skips the value.
    public mutating func skip() throws(JSONSyntaxError) {
        try parser.skipValue()
    }

    /// Reads an object: `body` gets each member's name, in order, with the reader at its value.
    /// False, and the value skipped, when it is not an object.
    public mutating func members(_ body: (Name, inout JSONReader) throws -> Void) throws -> Bool {
        guard parser.next == UInt8(ascii: "{") else { try parser.skipValue(); return false }
        try parser.open()
        if parser.close(UInt8(ascii: "}")) { return true }
        repeat {
            let name = try parser.memberNameInPlace()
            let start = parser.index
            try body(name, &self)
            if parser.index == start { try parser.skipValue() }
        } while try !parser.endMember()
        return true
    }

    /// Reads an array: `body` is called with the reader at each element, in order.
    /// False, and the value skipped, when it is not an array.
    public mutating func elements(_ body: (inout JSONReader) throws -> Void) throws -> Bool {
        guard parser.next == UInt8(ascii: "[") else { try parser.skipValue(); return false }
        try parser.open()
        if parser.close(UInt8(ascii: "]")) { return true }
        repeat {
            let start = parser.index
            try body(&self)
            if parser.index == start { try parser.skipValue() }
        } while try !parser.endElement()
        return true
    }
}

extension JSONReader {
    /// A member's name as ``members(_:)`` hands it over: compared with a literal
    /// (`name == "id"`, `case "seq":`) without making a string. Its bytes are those of the
    /// text being read: valid only inside the `body` it was given to.
    public struct Name: CustomStringConvertible {
        /// The name's UTF-8 when it came without escapes (printable ASCII); empty otherwise.
        private let bytes: UnsafeBufferPointer<UInt8>
        /// The name decoded, when it came with escapes or beyond ASCII.
        private let decoded: String?

        init(bytes: UnsafeBufferPointer<UInt8>) { (self.bytes, self.decoded) = (bytes, nil) }
        init(decoded: String) { (self.bytes, self.decoded) = (UnsafeBufferPointer(start: nil, count: 0), decoded) }

        /// The name as a string.
        public var description: String { decoded ?? String(decoding: bytes, as: UTF8.self) }

        /// Whether the name is `literal`.
        public static func == (name: Name, literal: StaticString) -> Bool {
            guard name.decoded == nil, literal.hasPointerRepresentation else { return name.description == literal.description }
            return name.bytes.elementsEqual(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
        }

        /// `case "seq":` in a `switch` over a name.
        public static func ~= (literal: StaticString, name: Name) -> Bool { name == literal }
    }
}

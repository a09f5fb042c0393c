/// Why a text is not valid JSON.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// The byte offset where it went wrong.
    public let offset: Int

    public var description: String { "\(message) at byte \(offset)" }
    /// Whether the text was refused for nesting deeper than ``JSON/maximumDepth``, not for its syntax.
    public var isNestingTooDeep: Bool { message == Self.nestingTooDeep }
    static let nestingTooDeep = "nesting too deep"
}

extension JSON {
    /// The deepest nesting accepted, so hostile input cannot exhaust the stack.
    public static let maximumDepth = 512

    /// Parses UTF-8 JSON text (RFC 8259). Invalid UTF-8, trailing garbage and
    /// nesting deeper than `maximumDepth` are errors.
    public init<Bytes: Collection<UInt8>>(parsing bytes: Bytes) throws(JSONSyntaxError) {
        let result: Result<JSON, JSONSyntaxError>? = bytes.withContiguousStorageIfAvailable { buffer in
            var parser = JSONParser(buffer)
            do throws(JSONSyntaxError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        if let result {
            self = try result.get()
        } else {
            let copy = Array(bytes)
            self = try copy.withUnsafeBufferPointer { buffer throws(JSONSyntaxError) in
                var parser = JSONParser(buffer)
                return try parser.parseDocument()
            }
        }
    }

    /// Parses JSON text.
    public init(parsing text: String) throws(JSONSyntaxError) {
        try self.init(parsing: Array(text.utf8))
    }
}

/// A recursive-descent parser over a byte buffer.
struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var index = 0
    private var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func parseDocument() throws(JSONSyntaxError) -> JSON {
        skipWhitespace()
        let value = try parseValue()
        try finish()
        return value
    }

    /// After the value: only whitespace may follow.
    mutating func finish() throws(JSONSyntaxError) {
        skipWhitespace()
        guard index == bytes.count else { throw error("unexpected data after the JSON value") }
    }

    /// The byte at the reading position, if any.
    var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// Moves past the `{` or `[` at the reading position, one level deeper.
    mutating func open() throws(JSONSyntaxError) {
        try enter()
        index += 1
        skipWhitespace()
    }

    /// Moves past the closing `}` or `]` at the reading position, if it is there, one level up.
    mutating func close(_ closing: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == closing else { return false }
        index += 1
        depth -= 1
        return true
    }

    /// After an array's element: moves past a `,` (false: more follow) or the closing `]` (true).
    mutating func endElement() throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: ","): index += 1; skipWhitespace(); return false
        case UInt8(ascii: "]"): index += 1; depth -= 1; return true
        default: throw error("expected ',' or ']'")
        }
    }

    /// A member's name and its `:`, leaving the reading position at its value.
    mutating func memberName() throws(JSONSyntaxError) -> String {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
        let key = try parseString()
        try nameSeparator()
        return key
    }

    /// ``memberName()`` in place when it is printable ASCII without escapes, as names
    /// nearly always are; decoded as a string otherwise.
    mutating func memberNameInPlace() throws(JSONSyntaxError) -> JSONReader.Name {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
        let name = if let text = asciiString() { JSONReader.Name(bytes: text) } else { JSONReader.Name(decoded: try parseString()) }
        try nameSeparator()
        return name
    }

    /// The `:` after a member's name, leaving the reading position at its value.
    private mutating func nameSeparator() throws(JSONSyntaxError) {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
        index += 1
        skipWhitespace()
    }

    private func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(message: message, offset: index)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONSyntaxError) -> JSON {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    mutating func expect(_ literal: StaticString) throws(JSONSyntaxError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of input") }
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for offset in 0..<count where bytes[index + offset] != expected[offset] {
            throw error("invalid literal")
        }
        index += count
    }

    private mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        guard depth <= JSON.maximumDepth else { throw error(JSONSyntaxError.nestingTooDeep) }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSON {
        try enter()
        index += 1
        var members: [(key: String, value: JSON)] = []
        // Repeated keys keep the last value; large objects find repeats by hashing.
        var positions: [String: Int]?
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(JSON.Object(uniqueMembers: members))
        }
        while true {
            skipWhitespace()
            let key = try memberName()
            let value = try parseValue()
            if members.count == 16, positions == nil {
                positions = Dictionary(members.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { $1 })
            }
            if positions != nil {
                if let position = positions![key] {
                    members[position].value = value
                } else {
                    positions![key] = members.count
                    members.append((key, value))
                }
            } else if let position = members.firstIndex(where: { $0.key == key }) {
                members[position].value = value
            } else {
                members.append((key, value))
            }
            guard try endMember() else { continue }
            return .object(JSON.Object(uniqueMembers: members))
        }
    }

    /// After an object's member: moves past a `,` (false: more follow) or the closing `}` (true, one level up).
    mutating func endMember() throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: ","): index += 1; return false
        case UInt8(ascii: "}"): index += 1; depth -= 1; return true
        default: throw error("expected ',' or '}'")
        }
    }

    /// Moves past one value, checking its structure without building it. Escapes and UTF-8
    /// are left to whoever parses the text.
    mutating func skipValue() throws(JSONSyntaxError) {
        guard index < bytes.count else { throw error("unexpected end of input") }
        let opening = bytes[index]
        guard opening == UInt8(ascii: "{") || opening == UInt8(ascii: "[") else {
            if opening == UInt8(ascii: "\"") { try skipString() } else { _ = try parseValue() }
            return
        }
        let isObject = opening == UInt8(ascii: "{")
        let closing = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        try enter()
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == closing {
            index += 1
            depth -= 1
            return
        }
        while true {
            skipWhitespace()
            if isObject {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
                try skipString()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
                index += 1
                skipWhitespace()
            }
            try skipValue()
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == closing {
                index += 1
                depth -= 1
                return
            } else {
                throw error(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
            }
        }
    }

    /// Moves past a string: its closing quote is the first not escaped by a backslash.
    private mutating func skipString() throws(JSONSyntaxError) {
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return
            }
            if byte < 0x20 { throw error("control character in string") }
            index += byte == UInt8(ascii: "\\") ? 2 : 1
        }
        throw error("unterminated string")
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSON {
        try enter()
        index += 1
        var elements: [JSON] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(elements)
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    /// The string at the reading position, in place, if it is printable ASCII without
    /// escapes: the reading position then moves past it. Nil, the position unmoved, otherwise.
    mutating func asciiString() -> UnsafeBufferPointer<UInt8>? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        var end = index + 1
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") {
                let text = UnsafeBufferPointer(rebasing: bytes[(index + 1)..<end])
                index = end + 1
                return text
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            end += 1
        }
        return nil
    }

    mutating func parseString() throws(JSONSyntaxError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes. ASCII needs no validation (most of what replication reads).
        var highBits: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if highBits & 0x80 == 0 { return String(decoding: slice, as: UTF8.self) }
                guard let string = String(validating: slice, as: UTF8.self) else {
                    throw JSONSyntaxError(message: "invalid UTF-8 in string", offset: start)
                }
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in string") }
            highBits |= byte
            index += 1
        }
        var buffer = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let string = String(validating: buffer, as: UTF8.self) else {
                    throw JSONSyntaxError(message: "invalid UTF-8 in string", offset: start)
                }
                return string
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of input") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): buffer.append(0x22)
                case UInt8(ascii: "\\"): buffer.append(0x5C)
                case UInt8(ascii: "/"): buffer.append(0x2F)
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired surrogate") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw error("unpaired surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid escape") }
                    buffer.append(contentsOf: UTF8.encode(unicode)!)
                default:
                    throw error("invalid escape")
                }
            default:
                if byte < 0x20 { throw error("control character in string") }
                buffer.append(byte)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("unexpected end of input") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// A number: a double, or the text of an integer of ±2^53 or beyond (a double would round
    /// it, or write it back in another form).
    private mutating func parseNumber() throws(JSONSyntaxError) -> JSON {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
        if isInteger {
            let negative = slice[0] == UInt8(ascii: "-")
            let digits = negative ? UnsafeBufferPointer(rebasing: slice.dropFirst()) : slice
            // 2^53 has 16 digits: more cannot fit a double exactly (nor overflow Int64 below).
            guard digits.count <= 16 else { return .bigInteger(String(decoding: slice, as: UTF8.self)) }
            var value: Int64 = 0
            for byte in digits { value = value * 10 + Int64(byte - 48) }
            // From 2^53 on, a double no longer holds every integer: keep the text.
            guard value < 1 << 53 else { return .bigInteger(String(decoding: slice, as: UTF8.self)) }
            return .number(Double(negative ? -value : value))
        }
        guard let value = Double(String(decoding: slice, as: UTF8.self)), value.isFinite else {
            throw JSONSyntaxError(message: "number out of range", offset: start)
        }
        return .number(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }
}

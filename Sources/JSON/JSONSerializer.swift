extension JSON {
    /// The value as compact UTF-8 JSON text.
    ///
    /// With `sortedKeys`, object members are written in Swift string order of
    /// their keys: the canonical form that revision digests are computed over,
    /// so every peer derives the same revision id from the same edit.
    public func serializedBytes(sortedKeys: Bool = false) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(512)
        write(to: &output, sortedKeys: sortedKeys)
        return output
    }

    /// The value as compact JSON text.
    public func serialized(sortedKeys: Bool = false) -> String {
        String(decoding: serializedBytes(sortedKeys: sortedKeys), as: UTF8.self)
    }

    /// Appends the compact JSON text of the value to `output`.
    public func write(to output: inout [UInt8], sortedKeys: Bool = false) {
        switch self {
        case .null: output.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(true): output.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
        case .bool(false): output.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
        case .number(let value): JSON.writeNumber(value, to: &output)
        case .bigInteger(let text): output.append(contentsOf: text.utf8)
        case .string(let value): JSON.writeString(value, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output, sortedKeys: sortedKeys)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            JSON.writeObject(object.members, to: &output, sortedKeys: sortedKeys)
        }
    }

    /// Appends an object of `members`, in key order with `sortedKeys`, leaving
    /// out the members `omit` names. Sorts positions, not the members themselves.
    package static func writeObject(
        _ members: [(key: String, value: JSON)], to output: inout [UInt8], sortedKeys: Bool,
        omit: (String) -> Bool = { _ in false }
    ) {
        output.append(UInt8(ascii: "{"))
        var first = true
        func writeMember(_ member: (key: String, value: JSON)) {
            if omit(member.key) { return }
            if !first { output.append(UInt8(ascii: ",")) }
            first = false
            writeString(member.key, to: &output)
            output.append(UInt8(ascii: ":"))
            member.value.write(to: &output, sortedKeys: sortedKeys)
        }
        guard sortedKeys, members.count > 1 else {
            for member in members { writeMember(member) }
            return output.append(UInt8(ascii: "}"))
        }
        withUnsafeTemporaryAllocation(of: Int.self, capacity: members.count) { buffer in
            var order = buffer
            for index in order.indices { order.initializeElement(at: index, to: index) }
            members.withUnsafeBufferPointer { members in
                order.sort { precedes(members[$0].key, members[$1].key) }
                for index in order { writeMember(members[index]) }
            }
        }
        output.append(UInt8(ascii: "}"))
    }

    /// Swift's string order: Unicode scalar order of the NFC forms, which is
    /// byte order for ASCII and the same on every platform.
    static func precedes(_ a: String, _ b: String) -> Bool { a < b }

    /// Appends `value` as a JSON number: integers without a fraction, others in
    /// the shortest form that reads back to the same double.
    static func writeNumber(_ value: Double, to output: inout [UInt8]) {
        if value.isFinite, value == value.rounded(), abs(value) < 9_007_199_254_740_992 {
            output.append(contentsOf: String(Int64(value)).utf8)
        } else if value.isFinite {
            output.append(contentsOf: value.description.utf8)
        } else {
            output.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        }
    }

    /// Appends `value` as a quoted JSON string.
    public static func writeString(_ value: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        let plain = value.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            output.append(contentsOf: bytes)
            return true
        }
        if plain == true {
            output.append(UInt8(ascii: "\""))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): output.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: output.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x08: output.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: output.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                output.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}

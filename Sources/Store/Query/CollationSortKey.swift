import JSON

/// Sort keys for view collation: a byte string per JSON value whose unsigned
/// lexicographic order (`memcmp`, a prefix first: SQLite's BLOB order) is the
/// order ``Collation/compare(_:_:)`` gives the values.
///
/// Mango JSON indexes key a SQLite `WITHOUT ROWID` table with these bytes, so a
/// range scan of the index comes out in CouchDB collation order without SQLite
/// knowing anything of JSON or Unicode. Two values have equal keys exactly when
/// they collate equal (`1` and `1.0`, `"é"` and `"e\u{301}"`).
///
/// ```swift
/// CollationSortKey.of("a").lexicographicallyPrecedes(CollationSortKey.of("A"))  // true
/// var key: [UInt8] = []                     // a compound key [name, age]
/// CollationSortKey.append(name, to: &key)
/// CollationSortKey.append(age, to: &key)
/// ```
///
/// A key is self-delimiting: no key is a proper prefix of another, so keys can be
/// concatenated and still compare value by value, as ``append(_:to:)`` does.
///
/// Encoding: a type byte, then the value.
/// - `null` `01`, `false` `02`, `true` `03`.
/// - Numbers `04` and eight bytes: the double's bits, big-endian, sign bit flipped
///   for positives and all bits flipped for negatives (`-0` written as `0`; a big
///   integer as its nearest double, which is what it collates by).
/// - Strings `05` and their collation levels: each non-zero primary weight, `00`,
///   each non-zero secondary, `00`, each non-zero tertiary, `00`, every weight in
///   an order-preserving code that never starts with `00`, so a level that is a
///   prefix of another sorts first, as in the UCA. Primaries of ASCII characters
///   take one byte; others take a byte for their place between those, a length
///   byte and their significant bytes. Secondaries below `FF` take one byte,
///   others `FF` and two; tertiaries are their own byte.
/// - Arrays `06`, each element's key, `00`.
/// - Objects `07`, then for each member in order `01`, the name's collation
///   levels and the value's key; then `00`.
///
/// Keys follow ``CollationKey``'s weights: keys stored by a release whose weights
/// differ must be rebuilt, not compared with new ones. Not a number, which JSON
/// cannot carry and ``Collation/compare(_:_:)`` finds equal to every number,
/// sorts after infinity.
public enum CollationSortKey {
    /// The version of the weights keys are made of. Change it with any change of
    /// ``CollationKey``'s weights or of this encoding: a database whose indexes were built
    /// with another version empties them when opened, and its queries build them again.
    /// Version 2: ß, æ, œ, ð, ſ, µ, ς, `` ` `` and `^` (and a few rarer letters) placed as ICU's root collator does.
    public static let version = 2

    /// The sort key of `value`: the `memcmp` order of two keys is the
    /// ``Collation/compare(_:_:)`` order of their values, and keys are equal
    /// exactly when the values compare equal.
    public static func of(_ value: JSON) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        append(value, to: &bytes)
        return bytes
    }

    /// Appends the key of `value` to `bytes`, so that a compound key `[a, b, c]`
    /// is built by appending each part in turn, without an intermediate array.
    /// Concatenated keys compare part by part.
    public static func append(_ value: JSON, to bytes: inout [UInt8]) {
        switch value {
        case .null:
            bytes.append(Tag.null)
        case .bool(let flag):
            bytes.append(flag ? Tag.true : Tag.false)
        case .number(let number):
            appendNumber(number, to: &bytes)
        case .bigInteger:
            appendNumber(value.doubleValue ?? 0, to: &bytes)  // as Collation.compare reads it
        case .string(let string):
            bytes.append(Tag.string)
            appendLevels(of: string, to: &bytes)
        case .array(let elements):
            bytes.append(Tag.array)
            for element in elements { append(element, to: &bytes) }
            bytes.append(end)
        case .object(let object):
            bytes.append(Tag.object)
            for (key, member) in object.members {
                bytes.append(memberMarker)
                appendLevels(of: key, to: &bytes)
                append(member, to: &bytes)
            }
            bytes.append(end)
        }
    }

    // MARK: - Values

    /// Type bytes, in ``Collation/typeRank(_:)`` order, all above ``end``.
    private enum Tag {
        static let null: UInt8 = 0x01
        static let `false`: UInt8 = 0x02
        static let `true`: UInt8 = 0x03
        static let number: UInt8 = 0x04
        static let string: UInt8 = 0x05
        static let array: UInt8 = 0x06
        static let object: UInt8 = 0x07
    }

    /// Ends an array, an object and each collation level: below every byte that
    /// can start an element, a member or a weight, so a prefix sorts first.
    private static let end: UInt8 = 0x00
    /// Starts an object member (a name's levels may start with ``end``).
    private static let memberMarker: UInt8 = 0x01

    /// A double's bits made to sort as unsigned bytes do: negatives inverted (a
    /// larger magnitude is smaller), positives above them.
    private static func appendNumber(_ number: Double, to bytes: inout [UInt8]) {
        var bits = number == 0 ? 0 : number.bitPattern  // -0 collates as 0
        if number.isNaN { bits = Double.nan.bitPattern }  // one NaN, above +infinity
        bits = bits & signBit != 0 ? ~bits : bits | signBit
        bytes.append(Tag.number)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
    }

    private static let signBit: UInt64 = 1 << 63

    // MARK: - Strings

    /// Appends the three collation levels of `string`, each ending in ``end``.
    private static func appendLevels(of string: String, to bytes: inout [UInt8]) {
        let tables = Tables.shared
        if tables.asciiFastPath {
            var string = string
            let done = string.withUTF8 { utf8 -> Bool in
                for byte in utf8 where byte >= 0x80 { return false }
                for byte in utf8 {
                    let code = tables.asciiPrimary[Int(byte)]
                    if code != 0 { bytes.append(code) }
                }
                bytes.append(end)
                for byte in utf8 {
                    let code = tables.asciiSecondary[Int(byte)]
                    if code != 0 { bytes.append(code) }
                }
                bytes.append(end)
                for byte in utf8 {
                    let code = tables.asciiTertiary[Int(byte)]
                    if code != 0 { bytes.append(code) }
                }
                bytes.append(end)
                return true
            }
            if done { return }
        }
        let elements = CollationKey.elements(of: string)
        for element in elements where element.primary != 0 {
            appendPrimary(element.primary, frequent: tables.frequentPrimaries, to: &bytes)
        }
        bytes.append(end)
        for element in elements where element.secondary != 0 { appendSecondary(element.secondary, to: &bytes) }
        bytes.append(end)
        for element in elements where element.tertiary != 0 { bytes.append(element.tertiary) }
        bytes.append(end)
    }

    /// A non-zero primary weight, in order among all primaries and prefix-free.
    ///
    /// The `n` frequent weights (at most 127) are the even bytes `02`, `04`, …
    /// `2n`; any other weight is the odd byte of the gap it falls in (`01` below
    /// the first frequent weight, `2i + 1` above the `i`-th), a byte counting
    /// its significant bytes (1 to 8) and those bytes, big-endian: within a gap,
    /// fewer bytes mean a smaller number.
    private static func appendPrimary(_ weight: UInt64, frequent: [UInt64], to bytes: inout [UInt8]) {
        var low = 0, high = frequent.count
        while low < high {
            let middle = (low + high) / 2
            if frequent[middle] < weight { low = middle + 1 } else { high = middle }
        }
        if low < frequent.count, frequent[low] == weight {
            bytes.append(UInt8(2 + 2 * low))
            return
        }
        bytes.append(UInt8(1 + 2 * low))
        let length = (UInt64.bitWidth - weight.leadingZeroBitCount + 7) / 8
        bytes.append(UInt8(length))
        for shift in stride(from: (length - 1) * 8, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: weight >> UInt64(shift)))
        }
    }

    /// A non-zero secondary weight: one byte below `FF`, else `FF` and two bytes.
    private static func appendSecondary(_ weight: UInt16, to bytes: inout [UInt8]) {
        if weight < 0xFF {
            bytes.append(UInt8(weight))
        } else {
            bytes.append(0xFF)
            bytes.append(UInt8(weight >> 8))
            bytes.append(UInt8(truncatingIfNeeded: weight))
        }
    }

    /// The one-byte codes of the ASCII characters' weights, derived from
    /// ``CollationKey/elements(of:)`` so that they cannot drift from it.
    private struct Tables: Sendable {
        /// The primaries of the ASCII characters, ascending: the ones coded in one byte.
        let frequentPrimaries: [UInt64]
        /// Each ASCII byte's code at each level; zero where it has no weight there.
        let asciiPrimary: [UInt8]
        let asciiSecondary: [UInt8]
        let asciiTertiary: [UInt8]
        /// Whether every ASCII character is at most one element whose every
        /// weight codes to one byte, so ASCII strings need no element array.
        let asciiFastPath: Bool

        static let shared = Tables()

        private init() {
            let elements = (0..<0x80).map { CollationKey.elements(of: String(Character(Unicode.Scalar(UInt8($0))))) }
            let primaries = Set(elements.joined().map(\.primary).filter { $0 != 0 }).sorted()
            let frequent = Array(primaries.prefix(127))
            var fastPath = true
            var primary = [UInt8](repeating: 0, count: 0x80)
            var secondary = primary, tertiary = primary
            for (byte, characterElements) in elements.enumerated() {
                guard let element = characterElements.first else { continue }  // ignorable
                if characterElements.count > 1 { fastPath = false }
                var code: [UInt8] = []
                if element.primary != 0 { CollationSortKey.appendPrimary(element.primary, frequent: frequent, to: &code) }
                if code.count > 1 { fastPath = false }
                primary[byte] = code.first ?? 0
                code = []
                if element.secondary != 0 { CollationSortKey.appendSecondary(element.secondary, to: &code) }
                if code.count > 1 { fastPath = false }
                secondary[byte] = code.first ?? 0
                tertiary[byte] = element.tertiary
            }
            frequentPrimaries = frequent
            asciiPrimary = primary
            asciiSecondary = secondary
            asciiTertiary = tertiary
            asciiFastPath = fastPath
        }
    }
}

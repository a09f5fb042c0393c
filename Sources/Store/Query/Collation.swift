import JSON

/// CouchDB's view collation of JSON values.
///
/// Values of different types order as `null < false < true < numbers < strings
/// < arrays < objects`. Numbers compare by value; arrays element by element,
/// a prefix first; objects member by member in their written order (key, then
/// value), a prefix first. Strings follow the Unicode Collation Algorithm as
/// CouchDB's ICU root collator does; see ``compareStrings(_:_:)``.
///
/// ```swift
/// Collation.compare("a", "A")        // < 0: lowercase first
/// Collation.compare(["b"], ["b", 1]) // < 0: a prefix sorts first
/// ```
public enum Collation {
    /// Compares two JSON values in view collation order: negative, zero or positive.
    public static func compare(_ a: JSON, _ b: JSON) -> Int {
        let rankA = typeRank(a), rankB = typeRank(b)
        if rankA != rankB { return rankA < rankB ? -1 : 1 }
        switch (a, b) {
        case (.number, .number), (.number, .bigInteger), (.bigInteger, .number), (.bigInteger, .bigInteger):
            let x = a.doubleValue ?? 0, y = b.doubleValue ?? 0
            return x < y ? -1 : (x > y ? 1 : 0)
        case (.string(let x), .string(let y)):
            return compareStrings(x, y)
        case (.array(let x), .array(let y)):
            for (left, right) in zip(x, y) {
                let order = compare(left, right)
                if order != 0 { return order }
            }
            return x.count < y.count ? -1 : (x.count > y.count ? 1 : 0)
        case (.object(let x), .object(let y)):
            for (left, right) in zip(x.members, y.members) {
                let keyOrder = compareStrings(left.key, right.key)
                if keyOrder != 0 { return keyOrder }
                let valueOrder = compare(left.value, right.value)
                if valueOrder != 0 { return valueOrder }
            }
            return x.count < y.count ? -1 : (x.count > y.count ? 1 : 0)
        default:
            return 0  // null, or equal booleans: the rank already told them apart
        }
    }

    /// Compares two strings as CouchDB's ICU root collator does (UCA, tertiary
    /// strength): negative, zero or positive.
    ///
    /// Letters compare first without regard to accents or case, then by accents,
    /// then by case with lowercase first: `"a" < "A" < "á" < "aa" < "b"`. Spaces,
    /// punctuation and symbols sort before digits, digits before letters, Latin
    /// before other scripts; control and format characters are ignored.
    ///
    /// This is an approximation of ICU written without it, exact for ASCII (in
    /// ICU's order, which for `` ` `` and `^` is not the one CouchDB's "Views
    /// Collation" documentation prints). Beyond ASCII it derives base letters and
    /// accents from Unicode character names, so it is right for the common
    /// precomposed and combining accents of Latin, Greek and Cyrillic and for the
    /// letters UCA writes as others (`ß` as "ss", `æ` as "ae", `ð` after "d",
    /// `µ` and final `ς` as variants of `μ` and `σ`), but does not know every
    /// language-neutral UCA subtlety, non-Latin script ordering beyond code point
    /// order, or contractions other than и + breve (й).
    public static func compareStrings(_ a: String, _ b: String) -> Int {
        if a == b, a.utf8.elementsEqual(b.utf8) { return 0 }
        if let order = compareASCII(a, b) { return order }
        return compareElements(CollationKey.elements(of: a), CollationKey.elements(of: b))
    }

    /// The type's place in collation order.
    static func typeRank(_ value: JSON) -> Int {
        switch value {
        case .null: 0
        case .bool(false): 1
        case .bool(true): 2
        case .number, .bigInteger: 3
        case .string: 4
        case .array: 5
        case .object: 6
        }
    }

    /// Both strings printable ASCII: one collation element per byte, so the levels
    /// can be compared in two passes without building keys. `nil` otherwise.
    private static func compareASCII(_ a: String, _ b: String) -> Int? {
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y -> Int? in
                var tertiary = 0
                for index in 0..<min(x.count, y.count) {
                    let (p, q) = (CollationKey.asciiPrimary[Int(x[index])], CollationKey.asciiPrimary[Int(y[index])])
                    if p == 0 || q == 0 { return nil }
                    if p != q { return p < q ? -1 : 1 }
                    if tertiary == 0 {
                        let (s, t) = (CollationKey.isASCIIUpper(x[index]), CollationKey.isASCIIUpper(y[index]))
                        if s != t { tertiary = s ? 1 : -1 }
                    }
                }
                for byte in x.dropFirst(y.count) where CollationKey.asciiPrimary[Int(byte)] == 0 { return nil }
                for byte in y.dropFirst(x.count) where CollationKey.asciiPrimary[Int(byte)] == 0 { return nil }
                if x.count != y.count { return x.count < y.count ? -1 : 1 }
                return tertiary
            }
        }
    }

    /// The UCA comparison: primaries, then secondaries, then tertiaries, each
    /// level ignoring zero weights.
    private static func compareElements(_ a: [CollationKey.Element], _ b: [CollationKey.Element]) -> Int {
        let primary = compareLevel(a.lazy.map(\.primary), b.lazy.map(\.primary))
        if primary != 0 { return primary }
        let secondary = compareLevel(a.lazy.map { UInt64($0.secondary) }, b.lazy.map { UInt64($0.secondary) })
        if secondary != 0 { return secondary }
        return compareLevel(a.lazy.map { UInt64($0.tertiary) }, b.lazy.map { UInt64($0.tertiary) })
    }

    private static func compareLevel<S: Sequence>(_ a: S, _ b: S) -> Int where S.Element == UInt64 {
        var x = a.lazy.filter { $0 != 0 }.makeIterator()
        var y = b.lazy.filter { $0 != 0 }.makeIterator()
        while true {
            switch (x.next(), y.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let p?, let q?) where p != q: return p < q ? -1 : 1
            default: continue
            }
        }
    }
}

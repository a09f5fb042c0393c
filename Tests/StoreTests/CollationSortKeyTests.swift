import JSON
import XCTest

@testable import Store

final class CollationSortKeyTests: XCTestCase {
    /// Values of every type, many of them a level or a prefix apart.
    static let handpicked: [JSON] = {
        var values: [JSON] = [nil, false, true]
        let numbers: [JSON] = [
            .number(-.infinity), .number(-.greatestFiniteMagnitude), -1e300, .bigInteger("-123456789012345678901234567890"),
            .bigInteger("-9007199254740993"), -9007199254740992, -1e20, -1000, -2.5, -1, -0.5,
            .number(-.leastNormalMagnitude), .number(-.leastNonzeroMagnitude), .number(-0.0), 0, 0.0,
            .number(.leastNonzeroMagnitude), .number(.leastNormalMagnitude), 1e-300, 0.1, 0.5, 1, 1.0,
            1.0000000000000002, 2, 3.0, 4, 10, 1e15, 9007199254740992, .bigInteger("9007199254740993"),
            .bigInteger("18446744073709551616"), 1e300, .number(.greatestFiniteMagnitude), .number(.infinity),
            .bigInteger("1" + String(repeating: "0", count: 400)), .bigInteger("not a number"),
        ]
        let strings: [String] = [
            "", " ", "  ", "\t", "\n", "\r\n", "\u{0}", "\u{1}", "\u{7f}", "\u{85}", "\u{a0}", "\u{200b}", "\u{301}",
            "a\u{0}b", "a\u{1}b", "a\u{200b}b", "ab", "a b", "a\tb", "a-b", "a_b", "ab\u{0}",
            "`", "^", "_", "-", ",", ";", ":", "!", "?", ".", "'", "\"", "(", ")", "[", "]", "{", "}", "@", "*",
            "/", "\\", "&", "#", "%", "+", "<", "=", ">", "|", "~", "$", "€", "¥", "§", "©", "°", "±", "¿", "—",
            "0", "1", "9", "10", "09", "1a", "²", "½", "①", "٣", "३",
            "a", "A", "aa", "aA", "Aa", "AA", "aaa", "b", "B", "ba", "bb", "abc", "Abc", "ABC", "abc1", "AbcZZZZZ",
            "z", "Z", "zz", "_design/", "_design0", "abc\u{fff0}",
            "á", "Á", "à", "â", "ä", "å", "ā", "a\u{301}", "A\u{301}", "a\u{300}", "a\u{301}\u{323}", "a\u{323}\u{301}",
            "ạ", "æ", "ae", "AE", "Æ", "Ae", "ß", "ss", "SS", "st", "Straße", "STRASSE", "strasse",
            "cote", "côte", "coté", "côté", "coter", "résumé", "resume", "resumes", "Résumé", "é", "e\u{301}", "E\u{301}",
            "ð", "Ð", "þ", "ŋ", "ı", "ĳ", "ij", "ø", "ł", "ñ", "n\u{303}", "ç",
            "ａ", "Ａ", "ｂ", "α", "Α", "ά", "ἀ", "α\u{313}", "β", "ω", "Ω", "а", "А", "е", "ё", "е\u{308}", "ж", "Ж", "я",
            "日本", "日本語", "中文", "한국어", "עברית", "العربية", "ไทย", "😀", "a😀", "😀a", "\u{10FFFF}",
        ]
        let arrays: [JSON] = [
            [], [nil], [false], [true], [0], [.number(-0.0)], [""], ["a"], ["A"], ["b"], ["b", "c"], ["b", "c", "a"],
            ["b", "d"], ["b", "d", "e"], [[]], [[], []], [[1]], [[1], 2], [[1, 2]], [1, "z"], [2], ["foo", "bar"],
            ["foo", [:]], ["foo", ["bar", "baz"]], ["foo", ["an": "object"]], [["a": 1]], [1, [2, [3]]],
            [1, [2, [3, nil]]], ["a\u{0}b"], ["ab"], ["é"], ["e\u{301}"], [nil, nil], [[[]]],
            [[:], nil], [["": nil]], [[:], [:]], [["a": 1], 1],
        ]
        let objects: [JSON] = [
            [:], ["": nil], ["": 1], ["a": nil], ["a": 1], ["a": 2], ["A": 1], ["aa": 1], ["b": 1], ["b": 2],
            ["b": 2, "a": 1], ["b": 2, "c": 2], ["a": [1, ["b": true]]], ["é": 1], ["e\u{301}": 1], ["a\u{0}": 1],
            ["a": 1, "b": 2], ["a": 1, "b": []], ["a": [:]], ["a": ["a": [:]]], ["a": "a", "b": nil], ["\u{0}": 1],
        ]
        values += numbers
        values += strings.map(JSON.string)
        values += arrays
        values += objects
        return values
    }()

    // MARK: - Agreement with Collation.compare

    func testHandpickedValuesOrderAsCollationDoes() {
        let values = Self.handpicked
        XCTAssertGreaterThan(Set(values.map(CollationSortKey.of)).count, 220, "the list tells many values apart")
        let result = Self.disagreements(values, key: CollationSortKey.of)
        XCTAssertEqual(result.pairs, values.count * values.count)
        XCTAssertEqual(result.count, 0, result.examples.joined(separator: "\n"))
    }

    func testRandomValuesOrderAsCollationDoes() {
        var generator = JSONGenerator(seed: 0x5EED_0001)
        let values = (0..<3000).map { _ in generator.value() }
        let keys = values.map(CollationSortKey.of)
        XCTAssertGreaterThan(Set(keys).count, 1200, "the generator makes many distinct values (and repeats some)")

        var checked = 0, wrong = 0, examples: [String] = []
        func check(_ i: Int, _ j: Int) {
            checked += 1
            let expected = Self.sign(Collation.compare(values[i], values[j]))
            let actual = Self.order(keys[i], keys[j])
            if expected != actual {
                wrong += 1
                if examples.count < 10 { examples.append("\(values[i]) vs \(values[j]): compare \(expected), key \(actual)") }
            }
        }
        // Every pair among the first 400, many of them of one type and a level apart.
        for i in 0..<400 { for j in 0..<400 { check(i, j) } }
        // Neighbours in key order, the pairs a wrong key would most likely misplace.
        let sorted = values.indices.sorted { keys[$0].lexicographicallyPrecedes(keys[$1]) }
        for offset in 1...3 {
            for (i, j) in zip(sorted, sorted.dropFirst(offset)) {
                check(i, j)
                check(j, i)
            }
        }
        // And random pairs of all.
        var random = SplitMix(seed: 99)
        for _ in 0..<30_000 { check(Int(random.next() % 3000), Int(random.next() % 3000)) }
        XCTAssertGreaterThan(checked, 200_000)
        XCTAssertEqual(wrong, 0, examples.joined(separator: "\n"))
    }

    /// Appended keys compare part by part: a compound index key `[a, b, c]`.
    func testConcatenatedKeysCompareAsTuples() {
        var generator = JSONGenerator(seed: 0x5EED_0002)
        let tuples = (0..<600).map { _ in [generator.value(), generator.value(), generator.value()] }
        let keys = tuples.map { tuple in
            var key: [UInt8] = []
            for part in tuple { CollationSortKey.append(part, to: &key) }
            return key
        }
        var wrong = 0, examples: [String] = []
        for i in tuples.indices {
            for j in tuples.indices {
                let expected = Self.sign(Collation.compare(.array(tuples[i]), .array(tuples[j])))
                let actual = Self.order(keys[i], keys[j])
                if expected != actual {
                    wrong += 1
                    if examples.count < 10 { examples.append("\(tuples[i]) vs \(tuples[j]): compare \(expected), key \(actual)") }
                }
            }
        }
        XCTAssertEqual(wrong, 0, examples.joined(separator: "\n"))
        XCTAssertEqual(keys[0], tuples[0].reduce(into: [UInt8]()) { $0 += CollationSortKey.of($1) }, "append adds exactly the key")
    }

    func testDocumentedOrder() {
        let documented: [JSON] = [
            nil, false, true,
            1, 2, 3.0, 4,
            "a", "A", "aa", "b", "B", "ba", "bb",
            ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"],
            ["a": 1], ["a": 2], ["b": 1], ["b": 2], ["b": 2, "a": 1], ["b": 2, "c": 2],
        ]
        let keys = documented.map(CollationSortKey.of)
        for (index, (a, b)) in zip(keys, keys.dropFirst()).enumerated() {
            XCTAssertTrue(a.lexicographicallyPrecedes(b), "\(documented[index]) < \(documented[index + 1])")
        }
        var generator = SplitMix(seed: 42)
        for _ in 0..<20 {
            let shuffled = documented.shuffled(using: &generator)
            let sorted = shuffled.sorted { CollationSortKey.of($0).lexicographicallyPrecedes(CollationSortKey.of($1)) }
            XCTAssertEqual(sorted, documented)
        }
    }

    /// SQLite's BLOB order, which the index relies on, is the order tested above.
    func testSQLiteOrdersKeysInCollationOrder() throws {
        let directory = TemporaryDirectory("sortkey")
        defer { directory.remove() }
        let connection = try Connection(path: directory.file("keys.sqlite"), readOnly: false)
        try connection.execute("CREATE TABLE keys (key BLOB NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (key, id)) WITHOUT ROWID")
        var generator = JSONGenerator(seed: 0x5EED_0003)
        let values = Self.handpicked + (0..<1000).map { _ in generator.value() }
        let insert = try connection.statement("INSERT INTO keys (key, id) VALUES (?, ?)")
        try connection.execute("BEGIN")
        for (id, value) in values.enumerated() {
            insert.reset()
            insert.bind(CollationSortKey.of(value), at: 1)
            insert.bind(id, at: 2)
            try insert.run()
        }
        try connection.execute("COMMIT")
        let select = try connection.statement("SELECT id FROM keys ORDER BY key, id")
        var ids: [Int] = []
        while try select.step() { ids.append(select.int(0)) }
        XCTAssertEqual(ids.count, values.count)
        var wrong = 0
        for (i, j) in zip(ids, ids.dropFirst()) where Collation.compare(values[i], values[j]) > 0 {
            wrong += 1
            if wrong <= 10 { XCTFail("SQLite put \(values[i]) before \(values[j])") }
        }
        XCTAssertEqual(wrong, 0)

        // A range scan: the strings from "b" up to, not including, "c" (any case or accent).
        let range = try connection.statement("SELECT id FROM keys WHERE key >= ? AND key < ? ORDER BY key")
        range.bind(CollationSortKey.of("b"), at: 1)
        range.bind(CollationSortKey.of("c"), at: 2)
        var found: Set<Int> = []
        while try range.step() { found.insert(range.int(0)) }
        let expected = Set(values.indices.filter { Collation.compare(values[$0], "b") >= 0 && Collation.compare(values[$0], "c") < 0 })
        XCTAssertFalse(expected.isEmpty)
        XCTAssertEqual(found, expected)
    }

    // MARK: - Details

    func testValuesThatCollateEqualHaveEqualKeys() {
        let equal: [(JSON, JSON)] = [
            (.number(-0.0), 0), (1, 1.0), (.bigInteger("9007199254740993"), 9007199254740992), (.bigInteger("x"), 0),
            ("é", "e\u{301}"), ("a\u{0}b", "ab"), ("a\u{200b}", "a"), ("\u{1f00}", "\u{3b1}\u{313}"),
            (["é": 1], ["e\u{301}": 1]), ([.number(-0.0)], [0]),
        ]
        for (a, b) in equal {
            XCTAssertEqual(Collation.compare(a, b), 0, "\(a) = \(b)")
            XCTAssertEqual(CollationSortKey.of(a), CollationSortKey.of(b), "\(a) = \(b)")
        }
    }

    /// ASCII strings take a path that builds no collation elements: it must write
    /// what the elements would (an ignorable character sends a string down the other).
    func testASCIIPathMatchesElementPath() {
        var ascii = (0..<0x80).map { String(Character(Unicode.Scalar(UInt8($0)))) }
        ascii += ["", "hello", "Hello World", "a\tb", "_design/x", "ABC-123", "a\u{0}b", "\u{7f}"]
        for string in ascii {
            XCTAssertEqual(CollationSortKey.of(.string(string)), CollationSortKey.of(.string(string + "\u{200b}")), string.debugDescription)
        }
    }

    func testKeyLayout() {
        XCTAssertEqual(CollationSortKey.of(nil), [0x01])
        XCTAssertEqual(CollationSortKey.of(false), [0x02])
        XCTAssertEqual(CollationSortKey.of(true), [0x03])
        XCTAssertEqual(CollationSortKey.of(0), [0x04, 0x80, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(CollationSortKey.of(-2), [0x04, 0x3F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(CollationSortKey.of(""), [0x05, 0, 0, 0])
        XCTAssertEqual(CollationSortKey.of([]), [0x06, 0])
        XCTAssertEqual(CollationSortKey.of([:]), [0x07, 0])
        XCTAssertEqual(CollationSortKey.of(["": nil]), [0x07, 0x01, 0, 0, 0, 0x01, 0])
        XCTAssertEqual(CollationSortKey.of("hello").count, 1 + 3 * 6, "ASCII weights take a byte each")
        XCTAssertEqual(CollationSortKey.of("\u{0}\u{1}").count, 4, "ignorables write nothing")
        let nan = CollationSortKey.of(.number(.nan))
        XCTAssertEqual(nan, CollationSortKey.of(.number(-.nan)), "one NaN")
        XCTAssertTrue(CollationSortKey.of(.number(.infinity)).lexicographicallyPrecedes(nan), "NaN after infinity")
        XCTAssertTrue(nan.lexicographicallyPrecedes(CollationSortKey.of("")), "and before strings")
    }

    func testNoKeyIsAPrefixOfAnother() {
        let keys = Array(Set(Self.handpicked.map(CollationSortKey.of)))
        for a in keys {
            for b in keys where a.count < b.count {
                XCTAssertFalse(b.starts(with: a), "\(a) prefixes \(b)")
            }
        }
    }

    /// The check the tests above rest on finds keys that are wrong.
    func testTheCheckCatchesWrongKeys() {
        let values = Self.handpicked
        XCTAssertGreaterThan(Self.disagreements(values) { Array($0.serialized().utf8) }.count, 0, "JSON text")
        XCTAssertGreaterThan(Self.disagreements(values) { CollationSortKey.of(Self.lowercased($0)) }.count, 0, "case-blind")
        XCTAssertGreaterThan(
            Self.disagreements(values) { value in
                guard case .number(let number) = value else { return CollationSortKey.of(value) }
                return [0x04] + withUnsafeBytes(of: (number.bitPattern ^ (number.sign == .minus ? ~0 : 1 << 63)).bigEndian, Array.init)
            }.count, 0, "-0 apart from 0")
    }

    // MARK: - Helpers

    static func sign(_ order: Int) -> Int { order < 0 ? -1 : (order > 0 ? 1 : 0) }

    /// SQLite's BLOB comparison: `memcmp` over the common length, then the shorter first.
    static func order(_ a: [UInt8], _ b: [UInt8]) -> Int {
        let length = min(a.count, b.count)
        let common = length == 0 ? 0 : a.withUnsafeBytes { x in b.withUnsafeBytes { y in memcmp(x.baseAddress!, y.baseAddress!, length) } }
        return common != 0 ? sign(Int(common)) : sign(a.count - b.count)
    }

    /// The pairs of `values` whose key order is not their collation order.
    static func disagreements(_ values: [JSON], key: (JSON) -> [UInt8]) -> (count: Int, pairs: Int, examples: [String]) {
        let keys = values.map(key)
        var count = 0, pairs = 0, examples: [String] = []
        for i in values.indices {
            for j in values.indices {
                pairs += 1
                let expected = sign(Collation.compare(values[i], values[j]))
                let actual = order(keys[i], keys[j])
                if expected != actual {
                    count += 1
                    if examples.count < 10 { examples.append("\(values[i]) vs \(values[j]): compare \(expected), key \(actual)") }
                }
            }
        }
        return (count, pairs, examples)
    }

    static func lowercased(_ value: JSON) -> JSON {
        switch value {
        case .string(let string): .string(string.lowercased())
        case .array(let elements): .array(elements.map(lowercased))
        case .object(let object): .object(JSON.Object(object.members.map { ($0.key.lowercased(), lowercased($0.value)) }))
        default: value
        }
    }
}

/// Seeded random JSON, drawn from small pools so that many values are a level,
/// a prefix or an ignorable character apart.
struct JSONGenerator {
    var random: SplitMix

    init(seed: UInt64) { random = SplitMix(seed: seed) }

    static let fragments = [
        "a", "A", "b", "B", "á", "a\u{301}", "Á", "e", "é", "E", "ß", "ss", "S", "\u{0}", "\t", " ", "-", "_", "$", "~",
        "1", "9", "10", "α", "Α", "ж", "ё", "日", "😀", "\u{301}", "\u{308}", "\u{200b}", "ａ", "ð", "æ", "ae",
    ]
    static let keys = ["a", "A", "b", "é", "e\u{301}", "", "a\u{0}", "aa", "ß", "ss"]
    static let numbers: [Double] = [
        -.infinity, -1e300, -2, -1, -0.5, -0.0, 0, .leastNonzeroMagnitude, 0.5, 1, 2, 3, 1e300, .infinity,
    ]
    static let bigIntegers = ["9007199254740993", "-9007199254740993", "18446744073709551616", "123456789012345678901234567890"]

    mutating func below(_ count: Int) -> Int { Int(random.next() % UInt64(count)) }

    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }

    mutating func string() -> String {
        var string = ""
        for _ in 0..<below(5) { string += pick(Self.fragments) }
        return string
    }

    mutating func number() -> JSON {
        switch below(6) {
        case 0, 1: return .number(pick(Self.numbers))
        case 2: return .number(Double(below(21) - 10))
        case 3: return .number(Double(below(4001) - 2000) / 64)
        case 4:
            let number = Double(bitPattern: random.next())
            return .number(number.isNaN ? 0 : number)
        default: return .bigInteger(pick(Self.bigIntegers))
        }
    }

    mutating func value(depth: Int = 0) -> JSON {
        switch below(depth < 3 ? 10 : 7) {
        case 0: return nil
        case 1: return .bool(below(2) == 0)
        case 2, 3: return number()
        case 4, 5, 6: return .string(string())
        case 7, 8:
            var elements: [JSON] = []
            for _ in 0..<below(4) { elements.append(value(depth: depth + 1)) }
            return .array(elements)
        default:
            var members: [(key: String, value: JSON)] = []
            for _ in 0..<below(4) { members.append((pick(Self.keys), value(depth: depth + 1))) }
            return .object(JSON.Object(members))
        }
    }
}

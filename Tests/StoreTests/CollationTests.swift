import JSON
import XCTest

@testable import Store

final class CollationTests: XCTestCase {
    /// The "Collation Specification" list of CouchDB's "Views Collation" documentation, in order.
    static let documentedOrder: [JSON] = [
        nil, false, true,
        1, 2, 3.0, 4,
        "a", "A", "aa", "b", "B", "ba", "bb",
        ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"],
        ["a": 1], ["a": 2], ["b": 1], ["b": 2], ["b": 2, "a": 1], ["b": 2, "c": 2],
    ]

    func testDocumentedOrderIsStrictlyIncreasing() {
        Self.assertStrictlyIncreasing(Self.documentedOrder)
    }

    func testSortingShuffledValuesRestoresDocumentedOrder() {
        Self.assertSortingShuffledRestores(Self.documentedOrder, seed: 42, times: 20)
    }

    /// Asserts that each of `values` collates before every later one, by
    /// ``Collation/compare(_:_:)`` both ways round and by the values' sort keys.
    static func assertStrictlyIncreasing(_ values: [JSON], file: StaticString = #filePath, line: UInt = #line) {
        let keys = values.map(CollationSortKey.of)
        for i in values.indices {
            XCTAssertEqual(Collation.compare(values[i], values[i]), 0, "\(values[i]) == itself", file: file, line: line)
            for j in values.indices where j > i {
                XCTAssertLessThan(Collation.compare(values[i], values[j]), 0, "\(values[i]) < \(values[j])", file: file, line: line)
                XCTAssertGreaterThan(Collation.compare(values[j], values[i]), 0, "\(values[j]) > \(values[i])", file: file, line: line)
                XCTAssertTrue(keys[i].lexicographicallyPrecedes(keys[j]), "sort key: \(values[i]) < \(values[j])", file: file, line: line)
            }
        }
    }

    /// Asserts that sorting `values`, shuffled `times` times, restores their order.
    static func assertSortingShuffledRestores(_ values: [JSON], seed: UInt64, times: Int,
                                              file: StaticString = #filePath, line: UInt = #line) {
        var generator = SplitMix(seed: seed)
        for _ in 0..<times {
            let shuffled = values.shuffled(using: &generator)
            XCTAssertEqual(shuffled.sorted { Collation.compare($0, $1) < 0 }, values, file: file, line: line)
        }
    }

    /// The ASCII sequence the documentation shows for CouchDB's ICU, but for `` ` ``
    /// and `^`, which ICU 72 moves from the front to after `%`.
    func testDocumentedASCIISequence() {
        let sequence = "_ - , ; : ! ? . ' \" ( ) [ ] { } @ * / \\ & # % ` ^ + < = > | ~ $ 0 1 2 3 4 5 6 7 8 9 "
            + "a A b B c C d D e E f F g G h H i I j J k K l L m M n N o O p P q Q r R s S t T u U v V w W x X y Y z Z"
        let characters = sequence.split(separator: " ").map(String.init)
        XCTAssertEqual(characters.count, 94)
        for (a, b) in zip(characters, characters.dropFirst()) {
            XCTAssertLessThan(Collation.compareStrings(a, b), 0, "\(a) < \(b)")
        }
        XCTAssertLessThan(Collation.compareStrings(" ", "_"), 0, "space first")
    }

    func testDocumentedKeyRangeExample() {
        // "abc < Abc < ABC < abc1 < AbcZZZZZ"
        let keys = ["abc", "Abc", "ABC", "abc1", "AbcZZZZZ"]
        for (a, b) in zip(keys, keys.dropFirst()) { XCTAssertLessThan(Collation.compareStrings(a, b), 0, "\(a) < \(b)") }
        XCTAssertLessThan(Collation.compareStrings("A", "aa"), 0)
        XCTAssertLessThan(Collation.compareStrings("a", "AA"), 0)
        XCTAssertLessThan(Collation.compareStrings("abc", "abc\u{fff0}"), 0)
        XCTAssertLessThan(Collation.compareStrings("_design/", "_design0"), 0)
    }

    func testAccentsAreSecondaryAndCaseTertiary() {
        let ordered = ["a", "A", "á", "Á", "à", "ab", "b"]
        for (a, b) in zip(ordered, ordered.dropFirst()) { XCTAssertLessThan(Collation.compareStrings(a, b), 0, "\(a) < \(b)") }
        XCTAssertLessThan(Collation.compareStrings("cote", "côte"), 0)
        XCTAssertLessThan(Collation.compareStrings("côte", "coter"), 0, "accent loses to a later letter")
        XCTAssertLessThan(Collation.compareStrings("résumé", "resumes"), 0)
        XCTAssertLessThan(Collation.compareStrings("Ö", "p"), 0)
        XCTAssertGreaterThan(Collation.compareStrings("ö", "o"), 0)
    }

    func testCanonicallyEquivalentStringsAreEqual() {
        XCTAssertEqual(Collation.compareStrings("\u{e9}", "e\u{301}"), 0)
        XCTAssertEqual(Collation.compareStrings("\u{1f00}", "\u{3b1}\u{313}"), 0)
        XCTAssertEqual(Collation.compare(["é": 1], ["e\u{301}": 1]), 0)
    }

    func testControlCharactersAreIgnorable() {
        XCTAssertEqual(Collation.compareStrings("a\u{0}b", "ab"), 0)
        XCTAssertEqual(Collation.compareStrings("a\u{200b}b", "ab"), 0)
    }

    func testNonLatinScriptsAndSpecials() {
        XCTAssertLessThan(Collation.compareStrings("z", "α"), 0, "Latin before Greek")
        XCTAssertLessThan(Collation.compareStrings("α", "Α"), 0, "Greek lowercase first")
        XCTAssertLessThan(Collation.compareStrings("Α", "β"), 0)
        XCTAssertLessThan(Collation.compareStrings("ω", "а"), 0, "Greek before Cyrillic")
        XCTAssertLessThan(Collation.compareStrings("е", "ё"), 0)
        XCTAssertLessThan(Collation.compareStrings("ё", "ж"), 0)
        XCTAssertLessThan(Collation.compareStrings("ss", "ß"), 0, "ß is ss with a secondary difference")
        XCTAssertLessThan(Collation.compareStrings("SS", "ß"), 0)
        XCTAssertLessThan(Collation.compareStrings("ß", "st"), 0)
        XCTAssertLessThan(Collation.compareStrings("AE", "æ"), 0, "æ is ae with a secondary difference")
        XCTAssertLessThan(Collation.compareStrings("D", "ð"), 0, "ð is d with a secondary difference")
        XCTAssertLessThan(Collation.compareStrings("ð", "da"), 0)
        XCTAssertLessThan(Collation.compareStrings("μ", "µ"), 0, "the micro sign is a tertiary variant of μ")
        XCTAssertLessThan(Collation.compareStrings("Σ", "ς"), 0, "final sigma is a tertiary variant of σ, after Σ")
        XCTAssertEqual(Collation.compareStrings("й", "и\u{306}"), 0, "и + breve contracts to й")
        XCTAssertLessThan(Collation.compareStrings("і", "й"), 0, "й is a letter of its own, after и and і")
        XCTAssertLessThan(Collation.compareStrings("9", "a"), 0)
        XCTAssertLessThan(Collation.compareStrings("10", "9"), 0, "digits compare one by one")
        XCTAssertLessThan(Collation.compareStrings("~", "0"), 0, "symbols before digits")
        XCTAssertLessThan(Collation.compareStrings("a", "ａ"), 0, "fullwidth is a tertiary variant")
        XCTAssertLessThan(Collation.compareStrings("ａ", "b"), 0)
    }

    func testNumbersCompareByValue() {
        XCTAssertEqual(Collation.compare(1, 1.0), 0)
        XCTAssertLessThan(Collation.compare(-5, 0.5), 0)
        XCTAssertLessThan(Collation.compare(2, 10), 0)
        XCTAssertLessThan(Collation.compare(1e300, "0"), 0, "any number before any string")
    }

    func testContainersCompareMemberByMember() {
        XCTAssertLessThan(Collation.compare([], [nil]), 0)
        XCTAssertLessThan(Collation.compare([1, "z"], [2]), 0)
        XCTAssertLessThan(Collation.compare(["foo", "bar"], ["foo", [:]]), 0, "the startkey/endkey trick")
        XCTAssertLessThan(Collation.compare(["foo", ["bar", "baz"]], ["foo", [:]]), 0)
        XCTAssertGreaterThan(Collation.compare(["foo", ["an": "object"]], ["foo", [:]]), 0)
        XCTAssertLessThan(Collation.compare([:], ["a": nil]), 0)
        XCTAssertEqual(Collation.compare(["a": [1, ["b": true]]], ["a": [1, ["b": true]]]), 0)
        XCTAssertNotEqual(Collation.compare(["a": 1, "b": 2], ["b": 2, "a": 1]), 0, "member order matters")
    }
}

/// A seeded generator, so shuffles are repeatable.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

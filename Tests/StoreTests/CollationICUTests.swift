import CICU
import JSON
import XCTest

@testable import Store

/// Store's hand-written collation against ICU's root collator, the one CouchDB
/// compares view keys with (`ucol_open("")`, default attributes), as the oracle
/// for every string comparison (issue 25).
final class CollationICUTests: XCTestCase {
    /// Mixed types in the order of CouchDB's "Views Collation" documentation
    /// (`null < false < true < numbers < strings < arrays < objects`), its
    /// strings widened with case, accents and other scripts. Each string is
    /// placed where ICU puts it: ``testTableStringsAreInICUOrder`` checks that.
    /// (`` ` `` and `^` are where ICU 72 puts them, after `%`: the documentation's
    /// older ICU put them first.)
    static let table: [JSON] = [
        nil, false, true,
        -1e300, -2, -1, 0, 0.5, 1, 2, 3.0, 4, 10, 1e300,
        "", " ", "_", "-", ",", ";", ":", "!", "?", ".", "'", "\"", "(", ")", "[", "]", "{", "}", "@", "*", "/",
        "\\", "&", "#", "%", "`", "^", "+", "<", "=", ">", "|", "~", "$", "0", "1", "10", "2", "9",
        "a", "A", "á", "Á", "à", "â", "å", "ä", "Ä", "aa", "aA", "Aa", "AA", "ab", "abc", "Abc", "ABC", "abc1",
        "AbcZZZZZ", "ae", "æ", "Æ", "b", "B", "ba", "bb", "c", "C", "ç", "Ç", "cote", "coté", "côte", "côté", "coter",
        "d", "D", "ð", "Ð", "e", "E", "é", "É", "è", "ê", "ë", "f", "n", "N", "ñ", "Ñ", "o", "O", "ó", "ö", "Ö",
        "œ", "Œ", "p", "resume", "résumé", "Résumé", "resumes", "s", "S", "ſ", "ss", "SS", "ß", "ẞ", "st", "u", "ü",
        "Ü", "z", "Z", "zz",
        "α", "Α", "ά", "β", "μ", "µ", "Μ", "σ", "Σ", "ς", "ω", "Ω",
        "а", "А", "е", "ё", "ж", "Ж", "и", "і", "ї", "й", "я",
        ["a"], ["A"], ["á"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"], ["é"], ["f"],
        ["a": 1], ["a": 2], ["A": 1], ["á": 1], ["b": 1], ["b": 2], ["b": 2, "a": 1], ["b": 2, "c": 2], ["é": 1],
    ]

    /// Strings of many kinds: ASCII, case, accents precomposed and combining,
    /// ignorables, digits, symbols, other scripts, CJK, emoji. Every pair is
    /// compared by both collations.
    static let corpus: [String] = {
        var strings = table.compactMap { value -> String? in
            if case .string(let string) = value { return string }
            return nil
        }
        strings += CollationSortKeyTests.handpicked.compactMap { value -> String? in
            if case .string(let string) = value { return string }
            return nil
        }
        strings += [
            // ASCII words, prefixes and case.
            "apple", "Apple", "APPLE", "apples", "applesauce", "app-le", "app le", "app_le", "a1", "a10", "a2", "A1",
            "hello world", "Hello World", "helloworld", "hello-world", "x", "X", "xy", "Xy", "y", "Y",
            // Accents: precomposed, combining, stacked, on capitals.
            "e\u{300}", "e\u{302}", "e\u{308}", "E\u{308}", "o\u{308}", "u\u{308}", "n\u{303}", "c\u{327}", "C\u{327}",
            "a\u{30a}", "A\u{30a}", "Å", "Å", "o\u{302}\u{301}", "ố", "ệ", "ẹ\u{302}", "ǖ", "ü\u{304}",
            "naïve", "naive", "Naïve", "façade", "facade", "crème brûlée", "creme brulee", "Ångström", "angstrom",
            "ça", "ca", "cz", "ő", "ø", "Ø", "œ", "oe", "Œ", "ŀ", "ĸ", "ſ", "ǆ", "ǅ", "dž", "Ǆ", "І",
            // Letters UCA writes as others, or places apart from their code points.
            "ẞ", "Dž", "DŽ", "ǈ", "ǉ", "Ĳ", "IJ", "ſt", "ßa", "ssa", "SSa", "Ð", "dz", "ǳ", "ǽ", "ẛ", "ǝ", "Ə",
            "ϑ", "θ", "ϕ", "φ", "μ", "Μ", "ὀ", "ό", "и", "й", "Й", "и\u{306}", "И\u{306}", "ѝ", "к", "ў", "у\u{306}",
            "a\u{363}", "\u{363}", "ad",
            // Combining marks alone and after other scripts.
            "\u{300}", "\u{308}", "\u{327}", "\u{20dd}", "a\u{20dd}", "α\u{301}", "ж\u{308}", "\u{301}a", "a\u{301}b",
            // Ignorables and spaces.
            "\u{ad}", "a\u{ad}b", "\u{200d}", "a\u{200d}b", "\u{feff}a", "\u{2028}", "\u{3000}", "a\u{3000}b",
            // Digits of other scripts, fractions, superscripts.
            "٠", "٩", "۱", "०", "१", "০", "๑", "１", "９", "¹", "³", "¼", "Ⅳ", "ⅳ", "⑩",
            // Symbols and punctuation beyond ASCII.
            "¡", "¿", "«", "»", "“", "”", "‘", "’", "–", "…", "•", "·", "†", "‰", "′", "£", "¢", "₩", "₹", "€",
            "©", "®", "™", "°", "µ", "¶", "÷", "×", "∞", "≠", "√", "←", "→", "♥", "★", "☃",
            // Greek, Cyrillic, Armenian, Georgian, Hebrew, Arabic, Devanagari, Thai.
            "γ", "Γ", "δ", "ς", "σ", "Σ", "ϐ", "ῶ", "ᾳ", "ѐ", "ї", "і", "Ї", "ґ", "щ", "ъ", "ь", "ю", "Ю",
            "ա", "Ա", "ბ", "א", "ב", "ש", "שָׁ", "ا", "ب", "ي", "آ", "ة", "क", "ख", "क्ष", "कि", "ก", "ข", "เก", "กา",
            // CJK, kana, Hangul.
            "一", "二", "三", "中", "日", "本", "語", "漢字", "汉字", "中国", "中國", "東京", "京都", "あ", "ア", "ｱ", "い",
            "か", "が", "カ", "ガ", "きゃ", "キャ", "ー", "가", "각", "나", "ㄱ", "ᄀ", "한", "글", "한글",
            // Emoji: plain, with skin tones, sequences, flags, keycaps.
            "😀", "😁", "😂", "🙂", "👍", "👍🏽", "👍🏿", "❤", "❤️", "👩‍💻", "👨‍👩‍👧", "🇫🇷", "🇩🇪", "1️⃣", "#️⃣", "🐱", "🐶",
            "a😀b", "😀😀", "x😀",
            // Other planes and private use.
            "\u{E000}", "\u{F8FF}", "\u{FFFD}", "\u{1D400}", "\u{1D41A}", "\u{20000}", "\u{2A6D6}", "\u{E0041}",
            "\u{10000}", "\u{1F600}\u{FE0F}",
        ]
        var seen = Set<[UInt8]>()
        return strings.filter { seen.insert(Array($0.utf8)).inserted }
    }()

    /// CouchDB's collator.
    var icu: ICURootCollator!

    override func setUpWithError() throws {
        icu = try XCTUnwrap(ICURootCollator(), "ICU's root collator opens")
    }

    override func tearDown() {
        icu = nil
    }

    func testTheOracleIsICURootCollation() {
        XCTAssertFalse(ICURootCollator.version.isEmpty)
        XCTAssertEqual(icu.compare("a", "A"), -1, "lowercase first at the tertiary level")
        XCTAssertEqual(icu.compare("A", "aa"), -1)
        XCTAssertEqual(icu.compare("á", "b"), -1, "accents are secondary")
        XCTAssertEqual(icu.compare("é", "e\u{301}"), 0, "canonical equivalents")
        XCTAssertEqual(icu.compare("a\u{0}b", "ab"), 0, "NUL is ignorable, and passes through")
        XCTAssertEqual(icu.compare("b", "a"), 1)
    }

    func testTableStringsAreInICUOrder() {
        let strings = Self.table.compactMap { value -> String? in
            if case .string(let string) = value { return string }
            return nil
        }
        XCTAssertGreaterThan(strings.count, 100)
        for (a, b) in zip(strings, strings.dropFirst()) {
            XCTAssertEqual(icu.compare(a, b), -1, "ICU: \(Self.describe(a)) < \(Self.describe(b))")
        }
    }

    func testTableIsInCollationOrder() {
        CollationTests.assertStrictlyIncreasing(Self.table)
    }

    func testSortingShuffledTableRestoresIt() {
        CollationTests.assertSortingShuffledRestores(Self.table, seed: 25, times: 10)
    }

    /// Every pair of the corpus whose characters Store's collation claims to
    /// order as ICU does (see ``isCovered(_:)``), in both directions: they must
    /// agree, but for the characters of ``knownDivergent``.
    func testCoveredPairsAgreeWithICU() {
        let strings = Self.corpus.filter(Self.isCovered)
        XCTAssertGreaterThan(strings.count, 200)
        let found = Self.disagreements(strings, icu: icu, compare: Collation.compareStrings)
        XCTAssertEqual(found.pairs, strings.count * strings.count)
        let unexpected = found.cases.filter { !Self.isKnownDivergence($0.key) }
        XCTAssertTrue(unexpected.isEmpty, "\(unexpected.count) pairs disagree with ICU:\n" + Self.report(unexpected))
        // Each known divergence is still one: the list says what is true now.
        let divergent = Set(found.cases.flatMap { ($0.key.a + $0.key.b).unicodeScalars })
        for scalar in Self.knownDivergent.keys where Self.isCovered(String(scalar)) {
            XCTAssertTrue(divergent.contains(scalar), "\(Self.describe(String(scalar))) now agrees with ICU: drop it from knownDivergent")
        }
    }

    /// The sort keys Mango indexes store order as ICU does, on the same pairs.
    func testCoveredSortKeysAgreeWithICU() {
        let strings = Self.corpus.filter(Self.isCovered)
        let keys = Dictionary(uniqueKeysWithValues: strings.map { (Array($0.utf8), CollationSortKey.of(.string($0))) })
        let found = Self.disagreements(strings, icu: icu) { a, b in
            Self.order(keys[Array(a.utf8)]!, keys[Array(b.utf8)]!)
        }
        let unexpected = found.cases.filter { !Self.isKnownDivergence($0.key) }
        XCTAssertTrue(unexpected.isEmpty, "\(unexpected.count) pairs disagree with ICU:\n" + Self.report(unexpected))
    }

    /// Random strings built from fragments a level, a prefix or an ignorable
    /// apart, as ``JSONGenerator`` makes them.
    func testRandomCoveredStringsAgreeWithICU() {
        var generator = JSONGenerator(seed: 0x1C0_0025)
        let strings = (0..<400).map { _ in generator.string() }.filter(Self.isCovered)
        XCTAssertGreaterThan(strings.count, 250)
        let found = Self.disagreements(strings, icu: icu, compare: Collation.compareStrings)
        let unexpected = found.cases.filter { !Self.isKnownDivergence($0.key) }
        XCTAssertTrue(unexpected.isEmpty, "\(unexpected.count) pairs disagree with ICU:\n" + Self.report(unexpected))
    }

    /// Beyond what it covers (other scripts, CJK, emoji, symbols, punctuation and
    /// digits outside ASCII) Store's collation is an approximation: how far it is
    /// from ICU there is measured and may not grow.
    func testDisagreementBeyondCoverageDoesNotGrow() {
        let found = Self.disagreements(Self.corpus, icu: icu, compare: Collation.compareStrings)
        let beyond = found.cases.filter { !(Self.isCovered($0.key.a) && Self.isCovered($0.key.b)) }
        print("collation beyond coverage: \(beyond.count) of \(found.pairs / 2) pairs disagree with ICU \(ICURootCollator.version)")
        XCTAssertLessThanOrEqual(beyond.count, Self.beyondCoverageBaseline,
                                 "more pairs than before disagree with ICU:\n" + Self.report(beyond, limit: 30))
    }

    /// Pairs Store's collation once ordered otherwise than ICU (before
    /// ``CollationSortKey/version`` 2): they agree now.
    func testFormerDivergencesAgree() {
        let pairs: [(String, String, icu: Int)] = [
            ("`", "_", 1), ("^", "%", 1),  // ICU 72's order, not the one CouchDB's documentation prints
            ("ß", "SS", 1), ("Straße", "STRASSE", 1), ("ſ", "S", 1),
            ("æ", "AE", 1), ("Æ", "AE", 1), ("æ", "aé", 1), ("œ", "OE", 1),
            ("ǆ", "e", -1), ("ϐ", "γ", -1), ("µ", "γ", 1), ("ς", "σ", 1), ("ð", "dž", -1), ("ї", "я", -1),
            ("ά", "ἀ", 1), ("ệ", "ẹ\u{302}", 0),  // ệ's marks in canonical order
            ("й", "і", 1), ("й", "и\u{306}", 0), ("ǝ", "f", -1), ("e", "ǝ", -1), ("\u{363}", "a", 1),
        ]
        for (a, b, theirs) in pairs {
            XCTAssertEqual(icu.compare(a, b), theirs, "ICU: \(Self.describe(a)) vs \(Self.describe(b))")
            XCTAssertEqual(Self.sign(Collation.compareStrings(a, b)), theirs, "Store: \(Self.describe(a)) vs \(Self.describe(b))")
            XCTAssertEqual(Self.order(CollationSortKey.of(.string(a)), CollationSortKey.of(.string(b))), theirs,
                           "sort keys: \(Self.describe(a)) vs \(Self.describe(b))")
        }
    }

    /// Where Store's collation and ICU's are known to differ, pair by pair: what
    /// each says now.
    func testKnownDivergencesAreAsRecorded() {
        let recorded: [(String, String, store: Int, icu: Int)] = [
            (" ", "\u{85}", -1, 1), ("  ", "\u{a0}", -1, 1),
        ]
        for (a, b, store, theirs) in recorded {
            XCTAssertEqual(Self.sign(Collation.compareStrings(a, b)), store, "Store: \(Self.describe(a)) vs \(Self.describe(b))")
            XCTAssertEqual(icu.compare(a, b), theirs, "ICU: \(Self.describe(a)) vs \(Self.describe(b))")
            XCTAssertTrue(Self.isKnownDivergence(Pair(a, b)) || !(Self.isCovered(a) && Self.isCovered(b)),
                          "\(Self.describe(a)) vs \(Self.describe(b)) is listed, or beyond coverage")
        }
    }

    /// The check is not vacuous: code point order, or case the wrong way round,
    /// disagrees with ICU on the covered corpus.
    func testTheCheckCatchesAWrongCollation() {
        let strings = Self.corpus.filter(Self.isCovered)
        let codePoints = Self.disagreements(strings, icu: icu) { a, b in
            a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars) ? -1 : (a.unicodeScalars.elementsEqual(b.unicodeScalars) ? 0 : 1)
        }
        XCTAssertGreaterThan(codePoints.cases.filter { !Self.isKnownDivergence($0.key) }.count, 1000)
        func swappedCase(_ string: String) -> String {
            String(string.map { $0.isUppercase ? Character($0.lowercased()) : Character($0.uppercased()) })
        }
        let upperFirst = Self.disagreements(["a", "A", "b", "B", "ab", "aB"], icu: icu) { a, b in
            Collation.compareStrings(swappedCase(a), swappedCase(b))
        }
        XCTAssertEqual(upperFirst.cases.count, 3, "a/A, b/B, ab/aB")
    }

    // MARK: - Coverage and known divergences

    /// Whether every character of `string` is one Store's collation claims to
    /// order as ICU does: ASCII, letters of Latin, Greek and Cyrillic with their
    /// accents (precomposed or combining), fullwidth ASCII, and ignorable
    /// controls and format characters.
    static func isCovered(_ string: String) -> Bool {
        string.unicodeScalars.allSatisfy { scalar in
            let value = scalar.value
            if value < 0x80 { return true }
            switch scalar.properties.generalCategory {
            case .control, .format: return value != 0x85
            case .nonspacingMark: return (0x300...0x36F).contains(value)
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter:
                return [0x80...0x24F, 0x370...0x3FF, 0x400...0x52F, 0x1E00...0x1FFF, 0xFF21...0xFF5A].contains { $0.contains(value) }
            default: return false
            }
        }
    }

    /// Characters of ``corpus`` Store's collation orders otherwise than ICU 72's
    /// root collator, and why: none now. (Known beyond the corpus: covered letters
    /// Store does not know by name, such as `ƣ`, `Ǝ`, `ђ`, `є` or `љ`, which sort by
    /// code point; и, a mark below and a breve, which ICU contracts to й.) Fixing
    /// one changes the sort keys Mango indexes store: bump
    /// ``CollationSortKey/version`` with it, so that they are rebuilt.
    static let knownDivergent: [Unicode.Scalar: String] = [:]

    /// The most pairs of ``corpus`` beyond coverage that disagree with ICU 72
    /// (measured: 2354 of 109,044 with ICU 72.1, the corpus having grown with the
    /// letters fixed for ``CollationSortKey/version`` 2); lower it when the collation gets closer.
    static let beyondCoverageBaseline = 2354

    static func isKnownDivergence(_ pair: Pair) -> Bool {
        (pair.a + pair.b).unicodeScalars.contains { knownDivergent[$0] != nil }
    }

    // MARK: - Helpers

    struct Pair: Hashable, CustomStringConvertible {
        var a: String, b: String
        init(_ a: String, _ b: String) { (self.a, self.b) = (a, b) }
        var description: String { "(\(CollationICUTests.describe(a)), \(CollationICUTests.describe(b)))" }
    }

    struct Case {
        var key: Pair
        var store: Int, icu: Int
    }

    /// Compares every ordered pair of `strings` with `compare` and with ICU; a
    /// disagreement is listed once, for the pair in the order met first.
    static func disagreements(
        _ strings: [String], icu: ICURootCollator, compare: (String, String) -> Int
    ) -> (pairs: Int, cases: [Case]) {
        var pairs = 0, cases: [Case] = [], listed = Set<Pair>()
        for a in strings {
            for b in strings {
                pairs += 1
                let (mine, theirs) = (sign(compare(a, b)), icu.compare(a, b))
                if mine != theirs, !listed.contains(Pair(b, a)), listed.insert(Pair(a, b)).inserted {
                    cases.append(Case(key: Pair(a, b), store: mine, icu: theirs))
                }
            }
        }
        return (pairs, cases)
    }

    static func report(_ cases: [Case], limit: Int = 60) -> String {
        let lines = cases.prefix(limit).map { "  \($0.key): store \($0.store), ICU \($0.icu)" }
        return (lines + (cases.count > limit ? ["  … and \(cases.count - limit) more"] : [])).joined(separator: "\n")
    }

    /// A string with its non-ASCII and invisible scalars spelled out.
    static func describe(_ string: String) -> String {
        "\"" + string.unicodeScalars.map { scalar in
            (0x21..<0x7F).contains(scalar.value) || (scalar.properties.isAlphabetic && scalar.value < 0x2000)
                ? String(scalar) : "\\u{\(String(scalar.value, radix: 16))}"
        }.joined() + "\""
    }

    static func sign(_ value: Int) -> Int { value < 0 ? -1 : (value > 0 ? 1 : 0) }

    static func order(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
    }
}

/// ICU's root-locale collator through the CICU shim; one per test, as a
/// `UCollator` is not to be shared between threads.
final class ICURootCollator {
    private let collator: OpaquePointer

    init?() {
        guard let collator = cicu_open_root() else { return nil }
        self.collator = collator
    }

    deinit { cicu_close(collator) }

    /// -1, 0 or 1, as `ucol_strcollUTF8` answers.
    func compare(_ a: String, _ b: String) -> Int {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        let result = x.withUnsafeBufferPointer { x in
            y.withUnsafeBufferPointer { y in
                x.withMemoryRebound(to: CChar.self) { x in
                    y.withMemoryRebound(to: CChar.self) { y in
                        cicu_compare_utf8(collator, x.baseAddress, Int32(x.count), y.baseAddress, Int32(y.count))
                    }
                }
            }
        }
        precondition(result != 2, "ICU failed to compare \(a) and \(b)")
        return Int(result)
    }

    static var version: String {
        var buffer = [CChar](repeating: 0, count: 20)
        cicu_version(&buffer)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

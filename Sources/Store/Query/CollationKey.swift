/// Collation elements of strings: the weights ``Collation/compareStrings(_:_:)``
/// compares level by level, in the manner of the Unicode Collation Algorithm.
///
/// Primaries order scripts and letters (accent- and case-blind), secondaries
/// accents, tertiaries case and variant forms. Accented letters and the base
/// letters they decompose to are found from Unicode character names, which the
/// standard library knows, so no ICU data is needed.
enum CollationKey {
    /// One collation element. A zero weight is ignored at its level.
    struct Element: Sendable, Hashable {
        var primary: UInt64
        var secondary: UInt16
        var tertiary: UInt8
    }

    /// The elements of `string`, in order.
    static func elements(of string: String) -> [Element] {
        var result: [Element] = []
        result.reserveCapacity(string.utf8.count)
        for scalar in string.unicodeScalars {
            if scalar.value < 0x80 {
                if let element = ascii[Int(scalar.value)] { result.append(element) }
            } else if scalar.value == 0x306, let last = result.last, last.primary == cyrillicI, last.secondary == common {
                result[result.count - 1].primary = cyrillicShortI  // и + breve is й, a letter of its own
            } else if let elements = named[scalar.value] {
                result.append(contentsOf: elements)
            } else {
                result.append(contentsOf: generic(scalar))
            }
        }
        return result
    }

    /// The primary weight of each ASCII byte; zero for ignorable controls and
    /// for bytes that are not ASCII.
    static let asciiPrimary: [UInt64] = (0..<256).map { $0 < 0x80 ? ascii[$0]?.primary ?? 0 : 0 }

    /// Whether an ASCII byte is an uppercase letter.
    static func isASCIIUpper(_ byte: UInt8) -> Bool { byte >= 0x41 && byte <= 0x5A }

    // MARK: - Weights

    private enum Group: UInt64 {
        case whitespace = 1, punctuation, symbol, currency, digit, latin, otherScript, other
    }

    private static let common: UInt16 = 0x20
    /// Secondaries of letters UCA writes as others (ß, æ, œ, ð; ſ): above
    /// ``common``, below every accent's, as in ICU.
    private static let letterVariant: UInt16 = 0x21
    private static let longS: UInt16 = 0x22

    /// Tertiaries, in ICU's order; a fullwidth form is one above its letter's.
    private static let lower: UInt8 = 0x02
    /// Compatibility variants: µ of μ, ϐ of β, ² of 2.
    private static let variant: UInt8 = 0x04
    /// The letters of an expansion (ß, æ, ĳ, ǆ): after variants, before uppercase.
    private static let ligature: UInt8 = 0x06
    private static let upper: UInt8 = 0x08
    /// The letters of an uppercase expansion (Æ, Ĳ), and the first of a titlecase one (ǅ).
    private static let upperLigature: UInt8 = 0x0A
    /// Final sigma, after capital sigma.
    private static let final: UInt8 = 0x0C

    private static func primary(_ group: Group, _ value: UInt64) -> UInt64 { group.rawValue << 40 | value }

    /// ASCII punctuation, then ASCII symbols, in the order of ICU's root collator
    /// (CouchDB's "Views Collation" documentation, from an older ICU, puts `` ` ``
    /// and `^` first). The symbols sort with the others, before them, after all
    /// punctuation; `$` is a currency sign and sorts with those, after all of them.
    private static let asciiPunctuation = Array("_-,;:!?.'\"()[]{}@*/\\&#%".unicodeScalars)
    private static let asciiSymbols = Array("`^+<=>|~".unicodeScalars)

    /// Elements of the ASCII characters; `nil` for ignorable controls.
    private static let ascii: [Element?] = (0..<0x80).map { code -> Element? in
        let scalar = Unicode.Scalar(UInt8(code))
        switch code {
        case 0x09...0x0D, 0x20:
            return Element(primary: primary(.whitespace, UInt64(code)), secondary: common, tertiary: lower)
        case 0x30...0x39:
            return Element(primary: primary(.digit, UInt64(code - 0x30) << 8), secondary: common, tertiary: lower)
        case 0x41...0x5A:
            return Element(primary: latinPrimary(code - 0x41), secondary: common, tertiary: upper)
        case 0x61...0x7A:
            return Element(primary: latinPrimary(code - 0x61), secondary: common, tertiary: lower)
        case 0x24:
            return Element(primary: primary(.currency, 0), secondary: common, tertiary: lower)
        default:
            if let rank = asciiPunctuation.firstIndex(of: scalar) {
                return Element(primary: primary(.punctuation, UInt64(rank + 1)), secondary: common, tertiary: lower)
            }
            if let rank = asciiSymbols.firstIndex(of: scalar) {
                return Element(primary: primary(.symbol, UInt64(rank + 1)), secondary: common, tertiary: lower)
            }
            return nil  // other controls are ignorable
        }
    }

    /// The primary of Latin letter `index` (0 for a): letters leave room after
    /// themselves for the special letters UCA sorts right after them.
    private static func latinPrimary(_ index: Int, after: UInt64 = 0) -> UInt64 {
        primary(.latin, UInt64(index + 1) << 8 | after)
    }

    /// The primary of a letter of another script: its code point's (or its
    /// lowercase's), leaving room after it as ``latinPrimary(_:after:)`` does.
    private static func scriptPrimary(_ code: UInt64, after: UInt64 = 0) -> UInt64 {
        primary(.otherScript, code << 8 | after)
    }

    /// Elements of a character outside the named tables, from its general category.
    private static func generic(_ scalar: Unicode.Scalar) -> [Element] {
        let properties = scalar.properties
        let value = UInt64(scalar.value)
        switch properties.generalCategory {
        case .nonspacingMark, .enclosingMark:
            switch scalar.value {
            case 0x34F: return []  // the combining grapheme joiner is ignorable
            case 0x344: return generic(Unicode.Scalar(0x308)!) + generic(Unicode.Scalar(0x301)!)  // dialytika tonos
            default: return [Element(primary: 0, secondary: markWeight(scalar.value), tertiary: lower)]
            }
        case .control, .format, .surrogate:
            return scalar.value == 0x85 ? [Element(primary: primary(.whitespace, value), secondary: common, tertiary: lower)] : []
        case .spaceSeparator, .lineSeparator, .paragraphSeparator:
            return [Element(primary: primary(.whitespace, value), secondary: common, tertiary: lower)]
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
            .initialPunctuation, .finalPunctuation, .otherPunctuation:
            return [Element(primary: primary(.punctuation, 0x100 + value), secondary: common, tertiary: lower)]
        case .mathSymbol, .modifierSymbol, .otherSymbol:
            return [Element(primary: primary(.symbol, value), secondary: common, tertiary: lower)]
        case .currencySymbol:
            return [Element(primary: primary(.currency, value), secondary: common, tertiary: lower)]
        case .decimalNumber, .letterNumber, .otherNumber:
            if let number = properties.numericValue, number >= 0, number <= 9, number == number.rounded() {
                let tertiary = properties.generalCategory == .decimalNumber ? lower : variant
                return [Element(primary: primary(.digit, UInt64(number) << 8), secondary: common, tertiary: tertiary)]
            }
            return [Element(primary: primary(.digit, 0x1000 + value), secondary: common, tertiary: lower)]
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .spacingMark:
            let base = properties.lowercaseMapping.unicodeScalars.first.map { UInt64($0.value) } ?? value
            let tertiary = properties.isUppercase || properties.generalCategory == .titlecaseLetter ? upper : lower
            return [Element(primary: scriptPrimary(base), secondary: common, tertiary: tertiary)]
        default:
            return [Element(primary: primary(.other, value), secondary: common, tertiary: lower)]
        }
    }

    // MARK: - Letters known by name

    /// Combining marks in the order of their secondary weights in ICU's root
    /// collator (Greek breathings first). ICU weighs the other marks of U+0300–U+0362
    /// alike: those below as U+0316, the rest as U+030D. Marks of other blocks
    /// follow all of these in code point order.
    private static let markOrder: [UInt32] = [
        0x332, 0x313, 0x314, 0x301, 0x300, 0x306, 0x302, 0x30C, 0x30A, 0x342, 0x308, 0x30B, 0x303, 0x307,
        0x338, 0x327, 0x328, 0x304, 0x30D, 0x316, 0x336, 0x335, 0x305, 0x309, 0x30F, 0x310, 0x311, 0x31B,
        0x321, 0x322, 0x323, 0x324, 0x325, 0x326, 0x32D, 0x32E, 0x330, 0x331, 0x334, 0x339, 0x345, 0x358,
        0x360, 0x361,
    ]

    /// Marks weighed as another: canonical singletons, and the short solidus as the long.
    private static let markTwins: [UInt32: UInt32] = [0x340: 0x300, 0x341: 0x301, 0x343: 0x313, 0x337: 0x336]

    /// The secondary weight of a combining mark: above ``common`` and the letter variants'.
    private static func markWeight(_ mark: UInt32) -> UInt16 {
        var mark = markTwins[mark] ?? mark
        if (0x300...0x362).contains(mark), !markOrder.contains(mark), let scalar = Unicode.Scalar(mark) {
            let combiningClass = scalar.properties.canonicalCombiningClass.rawValue
            mark = combiningClass == 220 || combiningClass == 233 ? 0x316 : 0x30D
        }
        if let index = markOrder.firstIndex(of: mark) { return longS + 1 + UInt16(index) }
        return 0x100 + UInt16(truncatingIfNeeded: mark & 0x7FFF)
    }

    /// A mark's canonical combining class, by which a letter's marks are put in
    /// the order normalization gives them (ệ is e, dot below, circumflex). Marks
    /// named but not encoded (``markNames`` has no entry) count as marks above.
    private static func combiningClass(_ mark: UInt32) -> UInt8 {
        guard mark < 0x2000, let scalar = Unicode.Scalar(mark) else { return 230 }
        return scalar.properties.canonicalCombiningClass.rawValue
    }

    /// The combining mark a `WITH …` phrase of a character name stands for.
    private static let markNames: [String: UInt32] = [
        "ACUTE": 0x301, "GRAVE": 0x300, "BREVE": 0x306, "CIRCUMFLEX": 0x302, "CARON": 0x30C,
        "RING ABOVE": 0x30A, "DIAERESIS": 0x308, "DOUBLE ACUTE": 0x30B, "TILDE": 0x303, "DOT ABOVE": 0x307,
        "STROKE": 0x335, "CEDILLA": 0x327, "OGONEK": 0x328, "MACRON": 0x304, "HOOK ABOVE": 0x309,
        "HOOK": 0x309, "HORN": 0x31B, "DOT BELOW": 0x323, "TONOS": 0x301, "OXIA": 0x301, "VARIA": 0x300,
        "DIALYTIKA": 0x308, "VRACHY": 0x306, "PSILI": 0x313, "DASIA": 0x314, "PERISPOMENI": 0x342,
        "YPOGEGRAMMENI": 0x345, "PROSGEGRAMMENI": 0x345, "COMMA BELOW": 0x326, "LINE BELOW": 0x331,
        "RING BELOW": 0x325, "TILDE BELOW": 0x330, "BREVE BELOW": 0x32E, "CIRCUMFLEX BELOW": 0x32D,
        "DIAERESIS BELOW": 0x324, "MIDDLE DOT": 0x387,
    ]

    /// Latin letters with no decomposition that UCA sorts just after a base letter.
    private static let latinSpecials: [String: (base: Int, after: UInt64)] = [
        "TURNED E": (4, 1), "SCHWA": (4, 2), "DOTLESS I": (8, 1), "KRA": (16, 1), "ENG": (13, 1), "THORN": (25, 1),
    ]

    /// Letters UCA writes as other letters, each with the ``ligature`` tertiary:
    /// ß as s, s and æ as a, e with a secondary difference on the first (so
    /// `"ss" < "SS" < "ß"`), ð as d and ſ as s likewise, ĳ and ǆ with none.
    private static let latinExpansions: [String: (letters: String, secondary: UInt16)] = [
        "LATIN SMALL LETTER SHARP S": ("ss", letterVariant), "LATIN SMALL LETTER AE": ("ae", letterVariant),
        "LATIN SMALL LIGATURE OE": ("oe", letterVariant), "LATIN SMALL LETTER ETH": ("d", letterVariant),
        "LATIN SMALL LETTER LONG S": ("s", longS), "LATIN SMALL LIGATURE IJ": ("ij", common),
        "LATIN SMALL LETTER DZ": ("dz", common), "LATIN SMALL LETTER LJ": ("lj", common),
        "LATIN SMALL LETTER NJ": ("nj", common),
    ]

    /// Letters UCA sorts as variants of another at the tertiary level.
    private static let letterVariants: [String: (base: String, tertiary: UInt8)] = [
        "MICRO SIGN": ("GREEK SMALL LETTER MU", variant),
        "GREEK SMALL LETTER FINAL SIGMA": ("GREEK SMALL LETTER SIGMA", final),
        "GREEK BETA SYMBOL": ("GREEK SMALL LETTER BETA", variant),
        "GREEK THETA SYMBOL": ("GREEK SMALL LETTER THETA", variant),
        "GREEK PHI SYMBOL": ("GREEK SMALL LETTER PHI", variant),
        "GREEK PI SYMBOL": ("GREEK SMALL LETTER PI", variant),
        "GREEK KAPPA SYMBOL": ("GREEK SMALL LETTER KAPPA", variant),
        "GREEK RHO SYMBOL": ("GREEK SMALL LETTER RHO", variant),
    ]

    /// Letters of other scripts UCA sorts just after another, not in code point order.
    private static let scriptSpecials: [String: (letter: String, after: UInt64)] = [
        "CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I": ("CYRILLIC SMALL LETTER I", 1),
        "CYRILLIC SMALL LETTER SHORT I": ("CYRILLIC SMALL LETTER I", 2),
    ]

    /// The primaries of и and й, which UCA contracts и + breve to.
    private static let cyrillicI = scriptPrimary(0x438)
    private static let cyrillicShortI = scriptPrimary(0x438, after: 2)

    /// Cyrillic letters whose names hide their decomposition.
    private static let cyrillicDecompositions: [String: (base: String, mark: UInt32)] = [
        "CYRILLIC SMALL LETTER IO": ("CYRILLIC SMALL LETTER IE", 0x308),
        "CYRILLIC SMALL LETTER YI": ("CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I", 0x308),
        "CYRILLIC SMALL LETTER SHORT U": ("CYRILLIC SMALL LETTER U", 0x306),
    ]

    /// Code points whose names are parsed: Latin-1 and Latin Extended, combining
    /// Latin letters, Greek, Cyrillic, Latin and Greek Extended, and fullwidth ASCII.
    private static let namedRanges: [ClosedRange<UInt32>] = [
        0x80...0x24F, 0x363...0x36F, 0x370...0x3FF, 0x400...0x52F, 0x1E00...0x1FFF, 0xFF01...0xFF5E,
    ]

    /// Scalars by name, for finding a decomposed letter's base.
    private static let scalarsByName: [String: Unicode.Scalar] = {
        var index: [String: Unicode.Scalar] = [:]
        for range in [0x20...0x7E] + namedRanges {
            for code in range {
                if let scalar = Unicode.Scalar(code), let name = scalar.properties.name { index[name] = scalar }
            }
        }
        return index
    }()

    /// Elements of the named characters whose names say how they collate.
    private static let named: [UInt32: [Element]] = {
        var table: [UInt32: [Element]] = [:]
        for range in namedRanges {
            for code in range {
                if let scalar = Unicode.Scalar(code), let name = scalar.properties.name,
                    let elements = elements(named: name)
                {
                    table[code] = elements
                }
            }
        }
        return table
    }()

    /// Elements derived from a character name, or `nil` if the name says nothing
    /// beyond its general category.
    private static func elements(named fullName: String) -> [Element]? {
        var name = Substring(fullName)
        var isVariant = false
        if name.hasPrefix("FULLWIDTH ") {
            name = name.dropFirst("FULLWIDTH ".count)
            isVariant = true
        }
        // A combining Latin letter (U+0363 and on) is that letter with the ligature tertiary, as in ICU.
        if name.hasPrefix("COMBINING LATIN "), let letter = scalarsByName[String(name.dropFirst("COMBINING ".count))],
            letter.value < 0x80
        {
            return ascii[Int(letter.value)].map { [Element(primary: $0.primary, secondary: common, tertiary: ligature)] }
        }
        // A titlecase digraph (ǅ, "CAPITAL LETTER D WITH SMALL LETTER Z WITH CARON") as its uppercase.
        let isTitle = name.contains(" WITH SMALL LETTER ")
        if isTitle { name = Substring(name.replacing(" WITH SMALL LETTER ", with: "")) }
        var head = name, marks: [UInt32] = []
        if let with = name.firstRange(of: " WITH ") {
            head = name[..<with.lowerBound]
            for phrase in name[with.upperBound...].split(separator: " AND ") {
                marks.append(markNames[String(phrase)] ?? 0x2000 + UInt32(phrase.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFF }))
            }
        }
        let isUpper = head.contains(" CAPITAL ")
        let baseName = String(head.replacing(" CAPITAL ", with: " SMALL "))

        var base: [Element]
        if let expansion = latinExpansions[baseName] {
            base = expansion.letters.unicodeScalars.compactMap { ascii[Int($0.value)] }
            for index in base.indices { base[index].tertiary = ligature }
            base[0].secondary = expansion.secondary
        } else if let variantOf = letterVariants[baseName], let scalar = scalarsByName[variantOf.base] {
            base = generic(scalar)
            for index in base.indices { base[index].tertiary = variantOf.tertiary }
        } else if let special = scriptSpecials[baseName], let scalar = scalarsByName[special.letter] {
            let weight = scriptPrimary(UInt64(scalar.value), after: special.after)
            base = [Element(primary: weight, secondary: common, tertiary: lower)]
        } else if baseName.hasPrefix("LATIN SMALL LETTER "), let special = latinSpecials[String(baseName.dropFirst("LATIN SMALL LETTER ".count))] {
            base = [Element(primary: latinPrimary(special.base, after: special.after), secondary: common, tertiary: lower)]
        } else if let decomposition = cyrillicDecompositions[baseName], let scalar = scalarsByName[decomposition.base] {
            base = elements(named: decomposition.base) ?? generic(scalar)
            marks.insert(decomposition.mark, at: 0)
        } else if baseName != fullName || !marks.isEmpty, let scalar = scalarsByName[baseName] {
            base = scalar.value < 0x80 ? ascii[Int(scalar.value)].map { [$0] } ?? [] : generic(scalar)
        } else {
            return nil
        }
        for index in base.indices where base[index].primary != 0 {
            if isUpper, !isTitle || index == 0 {
                base[index].tertiary = base[index].tertiary == ligature || isTitle ? upperLigature : upper
            }
            if isVariant { base[index].tertiary += 1 }
        }
        // Marks in canonical order (a stable sort by combining class), as NFD has them.
        marks = marks.indices.sorted { (combiningClass(marks[$0]), $0) < (combiningClass(marks[$1]), $1) }.map { marks[$0] }
        return base + marks.map { Element(primary: 0, secondary: markWeight($0), tertiary: lower) }
    }
}

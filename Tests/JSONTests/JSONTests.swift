import JSON
import XCTest

/// The JSON parser and serializer.
final class JSONTests: XCTestCase {
    func testRoundTripKeepsOrderAndValues() throws {
        let text = #"{"z":1,"a":[true,false,null,-0.5,1e+21,"é\n\"\\\u0001"],"m":{"k":12345678901234}}"#
        let value = try JSON(parsing: text)
        XCTAssertEqual(value["z"], 1)
        XCTAssertEqual(value["a"]?.arrayValue?[5], .string("é\n\"\\\u{01}"))
        XCTAssertEqual(value["m"]?["k"]?.intValue, 12_345_678_901_234)
        XCTAssertEqual(try JSON(parsing: value.serialized()), value)
        XCTAssertEqual(value.serialized(), #"{"z":1,"a":[true,false,null,-0.5,1e+21,"é\n\"\\\u0001"],"m":{"k":12345678901234}}"#)
        XCTAssertEqual(value.serialized(sortedKeys: true).prefix(6), #"{"a":["#)
    }

    func testEscapesAndSurrogates() throws {
        XCTAssertEqual(try JSON(parsing: #""\ud83d\ude00 \u00e9 \/""#), .string("😀 é /"))
        XCTAssertThrowsError(try JSON(parsing: #""\ud83d""#))
        XCTAssertThrowsError(try JSON(parsing: #""\x""#))
    }

    func testRejectsMalformedText() {
        for text in ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "tru", "[1] x", "\"\u{01}\"", "{\"a\":1,}", "NaN"] {
            XCTAssertThrowsError(try JSON(parsing: text), "accepted \(text)")
        }
    }

    func testInvalidUTF8InStringsIsRefusedAndASCIIAndUTF8AreKept() throws {
        for bytes: [UInt8] in [[0x22, 0x61, 0xFF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xC3, 0x22],
                               [0x22, 0x5C, 0x6E, 0xFF, 0x22], [0x22, 0x61, 0x62, 0x63, 0x80, 0x22]] {
            XCTAssertThrowsError(try JSON(parsing: bytes), "accepted \(bytes)")
        }
        XCTAssertEqual(try JSON(parsing: Array(#""1-abc""#.utf8)), .string("1-abc"))
        XCTAssertEqual(try JSON(parsing: Array(#""x é 😀""#.utf8)), .string("x é 😀"))
    }

    func testNestingLimit() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        XCTAssertThrowsError(try JSON(parsing: deep))
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        XCTAssertNoThrow(try JSON(parsing: fine))
    }

    /// Integers below 2^53 in magnitude are doubles whatever their sign, written back as they
    /// came; from 2^53 on they keep their text. Every number parses back from its serialized
    /// form to the same value (a negative 16-digit integer once came back as a big integer's
    /// text, unequal to the double it was written from).
    func testNumbersKeepTheirKindAcrossARoundTrip() throws {
        XCTAssertEqual(try JSON(parsing: "-9007199254740991"), .number(-9_007_199_254_740_991))
        XCTAssertEqual(try JSON(parsing: "-4444243600000000"), .number(-4_444_243_600_000_000))
        for integer in ["-9007199254740992", "9007199254740992", "-9007199254740993", "9007199254740993"] {
            XCTAssertEqual(try JSON(parsing: integer), .bigInteger(integer))
        }
        for integer in ["-9007199254740992", "9007199254740992", "-9007199254740991", "9007199254740991", "-4444243600000000", "-0", "7"] {
            XCTAssertEqual(try JSON(parsing: integer).serialized(), integer == "-0" ? "0" : integer)
        }
        for text in ["-44442436E8", "-9007199254740992", "9007199254740992", "-1e15", "-123456789012345678", "-0", "0.5e-3"] {
            let value = try JSON(parsing: text)
            XCTAssertEqual(try JSON(parsing: value.serialized()), value, text)
        }
    }

    func testDuplicateKeysKeepTheLast() throws {
        XCTAssertEqual(try JSON(parsing: #"{"a":1,"a":2}"#), ["a": 2])
    }
}

extension JSONTests {
    func testLargeObjectsKeepOrderAndLastDuplicate() throws {
        let members = (0..<2000).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        let value = try JSON(parsing: "{" + members + #","k5":"again"}"#)
        XCTAssertEqual(value.objectValue?.count, 2000)
        XCTAssertEqual(value["k5"], "again")
        XCTAssertEqual(value.objectValue?.keys.prefix(3), ["k0", "k1", "k2"])
    }
}

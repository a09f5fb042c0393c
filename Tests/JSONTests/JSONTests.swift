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
        XCTAssertThrowsError(try JSON(parsing: #""\ud83d""#)) { XCTAssertEqual(($0 as? JSONSyntaxError)?.message, "unpaired surrogate") }
        XCTAssertThrowsError(try JSON(parsing: #""\x""#)) { XCTAssertEqual(($0 as? JSONSyntaxError)?.message, "invalid escape") }
    }

    func testRejectsMalformedText() {
        let refusals = [
            ("", "unexpected end of input"), ("{", "expected a member name"), ("[1,]", "unexpected character"),
            ("{\"a\" 1}", "expected ':'"), ("01", "unexpected data after the JSON value"), ("1.", "invalid number"),
            ("-", "invalid number"), ("tru", "unexpected end of input"), ("[1] x", "unexpected data after the JSON value"),
            ("\"\u{01}\"", "control character in string"), ("{\"a\":1,}", "expected a member name"), ("NaN", "unexpected character"),
        ]
        for (text, message) in refusals {
            XCTAssertThrowsError(try JSON(parsing: text), "accepted \(text)") { XCTAssertEqual(($0 as? JSONSyntaxError)?.message, message, text) }
        }
    }

    func testInvalidUTF8InStringsIsRefusedAndASCIIAndUTF8AreKept() throws {
        for bytes: [UInt8] in [[0x22, 0x61, 0xFF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xC3, 0x22],
                               [0x22, 0x5C, 0x6E, 0xFF, 0x22], [0x22, 0x61, 0x62, 0x63, 0x80, 0x22]] {
            XCTAssertThrowsError(try JSON(parsing: bytes), "accepted \(bytes)") {
                XCTAssertEqual(($0 as? JSONSyntaxError)?.message, "invalid UTF-8 in string", "\(bytes)")
            }
        }
        XCTAssertEqual(try JSON(parsing: Array(#""1-abc""#.utf8)), .string("1-abc"))
        XCTAssertEqual(try JSON(parsing: Array(#""x é 😀""#.utf8)), .string("x é 😀"))
    }

    func testNestingLimit() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        XCTAssertThrowsError(try JSON(parsing: deep)) { XCTAssertEqual(($0 as? JSONSyntaxError)?.isNestingTooDeep, true) }
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

    func testAReaderBuildsWhatItIsAskedForAndTakesTheRestAsTextOrSkipsIt() throws {
        let doc = #"{"_id":"a","n":[1,{"doc":"}"}],"s":"q\"]\\","e":{}}"#
        let line = #" {"seq":3,"doc": "# + doc + #" ,"id":"a","deleted":true,"changes":[{"rev":"1-a"},{"x":[]},7],"n":"x"} "#
        var (id, text, seq, deleted, revisions) = (String?.none, [UInt8]?.none, JSON?.none, Bool?.none, [String?]())
        let isObject = try JSONReader.read(ArraySlice(line.utf8)) { row in
            try row.members { name, value in
                switch name {
                case "id": id = try value.string()
                case "doc": text = try value.text()
                case "seq": seq = try value.value()
                case "deleted": deleted = try value.bool()
                case "changes":
                    _ = try value.elements { change in
                        var rev: String?
                        _ = try change.members { name, value in if name == "rev" { rev = try value.string() } }
                        revisions.append(rev)
                    }
                default: break  // skipped
                }
            }
        }
        XCTAssertTrue(isObject)
        XCTAssertEqual(id, "a")
        XCTAssertEqual(seq, 3)
        XCTAssertEqual(deleted, true)
        XCTAssertEqual(revisions, ["1-a", nil, nil])
        XCTAssertEqual(text.map { String(decoding: $0, as: UTF8.self) }, doc)
        XCTAssertEqual(try JSON(parsing: try XCTUnwrap(text)), try JSON(parsing: doc))

        // A value of another kind is skipped and answered with nil or false.
        let kinds = try JSONReader.read(ArraySlice(#"[{"a":1}, "s", 2, [3]]"#.utf8)) { array in
            var answers: [String] = []
            _ = try array.elements { element in
                answers.append("\(try element.string() ?? "-")")
            }
            return answers
        }
        XCTAssertEqual(kinds, ["-", "s", "-", "-"])
        XCTAssertEqual(try JSONReader.read(ArraySlice("1".utf8)) { try $0.members { _, _ in XCTFail("not an object") } }, false)
        XCTAssertEqual(try JSONReader.read(ArraySlice("1".utf8)) { try $0.bool() }, nil)
        // Escapes and UTF-8 in text are left to whoever parses it.
        let loose = try JSONReader.read(ArraySlice(#"{"a":"\x"}"#.utf8)) { try $0.text() }
        XCTAssertThrowsError(try JSON(parsing: loose)) { XCTAssertEqual(($0 as? JSONSyntaxError)?.message, "invalid escape") }
    }

    /// A string of printable ASCII without escapes is handed over in place; anything else is
    /// left where it is, to be read the usual way.
    func testAReaderHandsPlainASCIIStringsOverInPlace() throws {
        let read = try JSONReader.read(ArraySlice(#"["1-ab", "a\"b", "é", 7, "", "x\ty"]"#.utf8)) { array in
            var answers: [String] = []
            _ = try array.elements { element in
                if let text = element.asciiString() {
                    answers.append("plain " + String(decoding: text, as: UTF8.self))
                } else {
                    answers.append("other " + (try element.string() ?? "-"))
                }
            }
            return answers
        }
        XCTAssertEqual(read, ["plain 1-ab", #"other a"b"#, "other é", "other -", "plain ", "other x\ty"])
    }

    /// A member's name is matched as the text it stands for, escaped or beyond ASCII alike; a
    /// name with a control character or bad UTF-8 is refused, as ``JSON/init(parsing:)`` refuses it.
    func testAReaderMatchesMemberNamesAsTheTextTheyStandFor() throws {
        let text = #"{"seq":1, "s\u0065q" : 2,"sé":3,"":4,"se":5,"seqq":6,"s\"q":7}"#
        let names = try JSONReader.read(ArraySlice(text.utf8)) { object in
            var found: [String] = []
            _ = try object.members { name, _ in
                let kind = switch name {
                case "seq": "seq"
                case "sé": "sé"
                case "": "empty"
                default: "other"
                }
                found.append(kind + " " + name.description)
            }
            return found
        }
        XCTAssertEqual(names, ["seq seq", "seq seq", "sé sé", "empty ", "other se", "other seqq", #"other s"q"#])
        XCTAssertThrowsError(try JSONReader.read(ArraySlice("{\"a\u{01}\":1}".utf8)) { try $0.members { _, _ in } }) {
            XCTAssertEqual(($0 as? JSONSyntaxError)?.message, "control character in string")
        }
        XCTAssertThrowsError(try JSONReader.read([UInt8(ascii: "{"), 0x22, 0xFF, 0x22, 0x3A, 0x31, UInt8(ascii: "}")]) {
            try $0.members { _, _ in }
        }) { XCTAssertEqual(($0 as? JSONSyntaxError)?.message, "invalid UTF-8 in string") }
    }

    func testAReaderChecksTheStructureOfWhatItSkips() throws {
        let deep = String(repeating: "[", count: JSON.maximumDepth) + String(repeating: "]", count: JSON.maximumDepth)
        let refusals = [
            (#"{"doc":{"a":1}"#, "unexpected end of input"), (#"{"doc":{"a" 1}}"#, "expected ':'"),
            (#"{"doc":[1,}"#, "unexpected character"), (#"{"doc":"a}"#, "unterminated string"),
            ("{\"doc\":\"\u{01}\"}", "control character in string"), (#"{"doc":{"a":tru}}"#, "invalid literal"),
            (#"{"doc":{"a":1]}"#, "expected ',' or '}'"), (#"{"doc":[1}"#, "expected ',' or ']'"), (#"{"doc":}"#, "unexpected character"),
            ("{\"doc\":\(deep)}", "nesting too deep"), (#"{"doc":{} "id":1}"#, "expected ',' or '}'"),
            (#"{"doc":{}} x"#, "unexpected data after the JSON value"), ("", "unexpected end of input"), ("{", "expected a member name"),
        ]
        for (text, message) in refusals {
            func refused(_ error: any Error) { XCTAssertEqual((error as? JSONSyntaxError)?.message, message, text) }
            XCTAssertThrowsError(try JSONReader.read(ArraySlice(text.utf8)) { try $0.members { _, _ in } }, "accepted \(text)", refused)
            XCTAssertThrowsError(try JSONReader.read(ArraySlice(text.utf8)) { try $0.members { _, value in _ = try value.text() } },
                                 "accepted \(text) as text", refused)
            XCTAssertThrowsError(try JSONReader.read(ArraySlice(text.utf8)) { _ in }, "skipped \(text)", refused)
        }
        let deepest = "{\"doc\":" + String(deep.dropFirst().dropLast()) + "}"
        XCTAssertNoThrow(try JSONReader.read(ArraySlice(deepest.utf8)) { try $0.members { _, _ in } })
        XCTAssertNoThrow(try JSONReader.read(ArraySlice(deepest.utf8)) { _ in })
    }
}

import Dispatch
import JSON
import Locking
import XCTest

@testable import Store

final class SelectorTests: XCTestCase {
    private func selector(_ json: String) throws -> Selector {
        try Selector(JSON(parsing: json))
    }

    /// Asserts which of `documents` (JSON texts) match `selectorJSON`.
    private func assertMatches(
        _ selectorJSON: String, _ documents: [String: Bool], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let selector = try selector(selectorJSON)
        for (document, expected) in documents {
            XCTAssertEqual(
                selector.matches(try JSON(parsing: document)), expected, "\(selectorJSON) on \(document)", file: file, line: line)
        }
    }

    private func assertRejected(
        _ selectorJSON: String, error name: String, reasonContains: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let json = try JSON(parsing: selectorJSON)
        do {
            _ = try Selector(json)
            XCTFail("\(selectorJSON) was accepted", file: file, line: line)
        } catch {
            XCTAssertEqual(error.kind, .badRequest, selectorJSON, file: file, line: line)
            XCTAssertEqual(error.error, name, selectorJSON, file: file, line: line)
            XCTAssertTrue(error.reason.contains(reasonContains), "\(selectorJSON): \(error.reason)", file: file, line: line)
        }
    }

    // MARK: - Basics

    func testEmptySelectorMatchesEverything() throws {
        try assertMatches("{}", [#"{"_id":"a"}"#: true, #"{"_id":"b","_deleted":true}"#: true])
    }

    func testKeepsTheSelectorAsGiven() throws {
        let json = try JSON(parsing: #"{"b":{"$gt":1},"a":2}"#)
        XCTAssertEqual(try Selector(json).json, json)
        XCTAssertEqual(try Selector(json), try Selector(json))
    }

    func testImplicitEqualityAndImplicitAnd() throws {
        try assertMatches(
            #"{"type":"note","n":2}"#,
            [
                #"{"type":"note","n":2}"#: true,
                #"{"type":"note","n":2.0,"x":1}"#: true,
                #"{"type":"note","n":3}"#: false,
                #"{"type":"Note","n":2}"#: false,
                #"{"n":2}"#: false,
            ])
    }

    func testNestedObjectsAreFieldPaths() throws {
        try assertMatches(
            #"{"a":{"b":1}}"#,
            [
                #"{"a":{"b":1}}"#: true,
                #"{"a":{"b":1,"c":2}}"#: true,  // not whole-object equality
                #"{"a":{"b":2}}"#: false,
                #"{"a":1}"#: false,
            ])
        try assertMatches(
            #"{"a":{"b":{"$gt":1},"c":"x"}}"#,
            [#"{"a":{"b":2,"c":"x"}}"#: true, #"{"a":{"b":1,"c":"x"}}"#: false, #"{"a":{"b":2}}"#: false])
        try assertMatches(#"{"a":{"$eq":{"b":1}}}"#, [#"{"a":{"b":1}}"#: true, #"{"a":{"b":1,"c":2}}"#: false])
        try assertMatches(#"{"a":{}}"#, [#"{"a":{}}"#: true, #"{"a":{"b":1}}"#: false])
    }

    func testDottedPathsEscapesAndArrayIndices() throws {
        try assertMatches(
            #"{"a.b.c":true}"#, [#"{"a":{"b":{"c":true}}}"#: true, #"{"a":{"b":{"c":false}}}"#: false, #"{"a.b.c":true}"#: false])
        try assertMatches(
            #"{"domain\\.com.ok":1}"#, [#"{"domain.com":{"ok":1}}"#: true, #"{"domain":{"com":{"ok":1}}}"#: false])
        try assertMatches(
            #"{"tags.1":"b"}"#, [#"{"tags":["a","b"]}"#: true, #"{"tags":["b","a"]}"#: false, #"{"tags":["b"]}"#: false])
        try assertMatches(#"{"a.0.n":1}"#, [#"{"a":[{"n":1}]}"#: true, #"{"a":[{"n":2},{"n":1}]}"#: false])
    }

    func testEqualityOnArraysAndObjectsIsWhole() throws {
        try assertMatches(
            #"{"a":[1,2]}"#, [#"{"a":[1,2]}"#: true, #"{"a":[2,1]}"#: false, #"{"a":[1,2,3]}"#: false, #"{"a":1}"#: false])
        try assertMatches(#"{"a":{"$eq":[1,{"b":"c"}]}}"#, [#"{"a":[1,{"b":"c"}]}"#: true, #"{"a":[1,{"b":"C"}]}"#: false])
        try assertMatches(#"{"a":null}"#, [#"{"a":null}"#: true, #"{"a":false}"#: false, #"{}"#: false])
    }

    // MARK: - Comparison operators

    func testComparisonsUseCollationAcrossTypes() throws {
        try assertMatches(
            #"{"v":{"$gt":5}}"#,
            [#"{"v":6}"#: true, #"{"v":5}"#: false, #"{"v":"1"}"#: true, #"{"v":[]}"#: true, #"{"v":true}"#: false, #"{"v":null}"#: false])
        try assertMatches(#"{"v":{"$gte":5}}"#, [#"{"v":5}"#: true, #"{"v":4.99}"#: false])
        try assertMatches(#"{"v":{"$lt":"b"}}"#, [#"{"v":"a"}"#: true, #"{"v":"B"}"#: false, #"{"v":"A"}"#: true, #"{"v":99}"#: true, #"{"v":{}}"#: false])
        try assertMatches(#"{"v":{"$lte":"a"}}"#, [#"{"v":"a"}"#: true, #"{"v":"A"}"#: false, #"{"v":null}"#: true])
        try assertMatches(#"{"v":{"$gt":null}}"#, [#"{"v":false}"#: true, #"{"v":null}"#: false, #"{}"#: false])
        try assertMatches(#"{"v":{"$lt":{}}}"#, [#"{"v":["z"]}"#: true, #"{"v":{}}"#: false, #"{"v":{"a":1}}"#: false])
        try assertMatches(#"{"v":{"$gt":3,"$lt":6}}"#, [#"{"v":4}"#: true, #"{"v":6}"#: false, #"{"v":3}"#: false])
    }

    func testNotEqualRequiresTheField() throws {
        // mango_selector: a missing field fails every condition except {"$exists": false}.
        try assertMatches(#"{"v":{"$ne":1}}"#, [#"{"v":2}"#: true, #"{"v":"1"}"#: true, #"{"v":1}"#: false, #"{}"#: false, #"{"v":null}"#: true])
        try assertMatches(#"{"v":{"$eq":1}}"#, [#"{"v":1}"#: true, #"{}"#: false])
    }

    func testIdComparesByRawOrder() throws {
        // CouchDB compares _id with Erlang term order: bytes, so "Z" < "a".
        try assertMatches(#"{"_id":{"$gt":"Z"}}"#, [#"{"_id":"a"}"#: true, #"{"_id":"Y"}"#: false])
        try assertMatches(#"{"other":{"$gt":"Z"}}"#, [#"{"other":"a"}"#: false, #"{"other":"z"}"#: false, #"{"other":"zz"}"#: true])
        try assertMatches(#"{"_id":{"$lt":"_design0"}}"#, [#"{"_id":"_design/abc"}"#: true, #"{"_id":"abc"}"#: false])
    }

    // MARK: - Membership

    func testIn() throws {
        try assertMatches(
            #"{"v":{"$in":[1,"a",[2]]}}"#,
            [
                #"{"v":1}"#: true, #"{"v":"a"}"#: true, #"{"v":"A"}"#: false,
                #"{"v":[5,"a"]}"#: true,  // an array matches when an element is in the list
                #"{"v":[2]}"#: false,  // elements 2 is not in the list; the whole array is not compared
                #"{"v":[[2]]}"#: true,
                #"{}"#: false,
            ])
        try assertMatches(#"{"v":{"$in":[]}}"#, [#"{"v":1}"#: false])
    }

    func testNin() throws {
        try assertMatches(
            #"{"v":{"$nin":[1,"a"]}}"#,
            [#"{"v":2}"#: true, #"{"v":1}"#: false, #"{"v":[2,3]}"#: true, #"{"v":[2,"a"]}"#: false, #"{}"#: false])
        try assertMatches(#"{"v":{"$nin":[]}}"#, [#"{"v":1}"#: true, #"{}"#: false])
    }

    func testAll() throws {
        try assertMatches(
            #"{"tags":{"$all":["a","b"]}}"#,
            [#"{"tags":["b","x","a"]}"#: true, #"{"tags":["a"]}"#: false, #"{"tags":"a"}"#: false, #"{"tags":["A","b"]}"#: false])
        try assertMatches(#"{"tags":{"$all":[]}}"#, [#"{"tags":[]}"#: false, #"{"tags":["a"]}"#: false])
        // A single array argument also matches that very array.
        try assertMatches(#"{"m":{"$all":[[1,2]]}}"#, [#"{"m":[1,2]}"#: true, #"{"m":[[1,2],3]}"#: true, #"{"m":[1,2,3]}"#: false])
    }

    func testSize() throws {
        try assertMatches(#"{"a":{"$size":2}}"#, [#"{"a":[1,[2,3]]}"#: true, #"{"a":[1]}"#: false, #"{"a":"ab"}"#: false, #"{}"#: false])
        try assertMatches(#"{"a":{"$size":0}}"#, [#"{"a":[]}"#: true, #"{"a":{}}"#: false])
    }

    // MARK: - Element and key matching

    func testElemMatch() throws {
        try assertMatches(
            #"{"s":{"$elemMatch":{"$gte":80,"$lt":85}}}"#,
            [#"{"s":[70,82]}"#: true, #"{"s":[70,90]}"#: false, #"{"s":[]}"#: false, #"{"s":82}"#: false])
        try assertMatches(
            #"{"people":{"$elemMatch":{"name":"ann","age":{"$gt":30}}}}"#,
            [
                #"{"people":[{"name":"bob","age":40},{"name":"ann","age":31}]}"#: true,
                #"{"people":[{"name":"ann","age":20},{"name":"bob","age":40}]}"#: false,
            ])
        try assertMatches(#"{"tags":{"$elemMatch":{"$eq":"x"}}}"#, [#"{"tags":["y","x"]}"#: true, #"{"tags":["y"]}"#: false])
    }

    func testAllMatch() throws {
        try assertMatches(
            #"{"s":{"$allMatch":{"$gt":1}}}"#,
            [#"{"s":[2,3]}"#: true, #"{"s":[2,1]}"#: false, #"{"s":[]}"#: false, #"{"s":5}"#: false])
        try assertMatches(#"{"p":{"$allMatch":{"ok":true}}}"#, [#"{"p":[{"ok":true},{"ok":true}]}"#: true, #"{"p":[{"ok":true},{}]}"#: false])
    }

    func testKeyMapMatch() throws {
        try assertMatches(
            #"{"cameras":{"$keyMapMatch":{"$eq":"secondary"}}}"#,
            [#"{"cameras":{"primary":1,"secondary":2}}"#: true, #"{"cameras":{"primary":1}}"#: false, #"{"cameras":{}}"#: false, #"{"cameras":["secondary"]}"#: false])
    }

    // MARK: - Existence, types and strings

    func testExists() throws {
        try assertMatches(#"{"a":{"$exists":true}}"#, [#"{"a":null}"#: true, #"{"b":1}"#: false])
        try assertMatches(#"{"a":{"$exists":false}}"#, [#"{"a":null}"#: false, #"{"b":1}"#: true])
        try assertMatches(#"{"a.b":{"$exists":false}}"#, [#"{"a":{}}"#: true, #"{"a":{"b":1}}"#: false, #"{}"#: true])
        // A path through a scalar is a bad path, which fails even $exists:false, as in CouchDB.
        try assertMatches(#"{"a.b":{"$exists":false}}"#, [#"{"a":5}"#: false])
    }

    func testType() throws {
        let documents = [
            #"{"v":null}"#: "null", #"{"v":true}"#: "boolean", #"{"v":1.5}"#: "number",
            #"{"v":"s"}"#: "string", #"{"v":[1]}"#: "array", #"{"v":{"a":1}}"#: "object",
        ]
        for type in Condition.typeNames {
            try assertMatches(#"{"v":{"$type":"\#(type)"}}"#, documents.mapValues { $0 == type })
        }
        try assertMatches(#"{"v":{"$type":"null"}}"#, [#"{}"#: false])
        try assertMatches(#"{"v":{"$type":"integer"}}"#, [#"{"v":1}"#: false])
    }

    func testMod() throws {
        try assertMatches(
            #"{"n":{"$mod":[4,1]}}"#,
            [#"{"n":9}"#: true, #"{"n":8}"#: false, #"{"n":9.5}"#: false, #"{"n":"9"}"#: false, #"{}"#: false])
        // Erlang's rem: the sign follows the dividend.
        try assertMatches(#"{"n":{"$mod":[4,-1]}}"#, [#"{"n":-9}"#: true, #"{"n":9}"#: false])
    }

    func testRegex() throws {
        try assertMatches(
            #"{"name":{"$regex":"^A.c"}}"#,
            [#"{"name":"Abc"}"#: true, #"{"name":"xAbc"}"#: false, #"{"name":"abc"}"#: false, #"{"name":5}"#: false, #"{}"#: false])
        try assertMatches(#"{"name":{"$regex":"(?i)ann"}}"#, [#"{"name":"JoANNa"}"#: true, #"{"name":"Jo"}"#: false])
        try assertMatches(#"{"code":{"$regex":"\\d{3}-\\d+$"}}"#, [#"{"code":"x123-4"}"#: true, #"{"code":"12-4"}"#: false])
        try assertMatches(#"{"w":{"$regex":"^.$"}}"#, [#"{"w":"é"}"#: true])
    }

    func testRegexIsSafeToShareAcrossThreads() throws {
        let selector = try selector(#"{"name":{"$regex":"^[a-m]+[0-9]*$"}}"#)
        let documents: [JSON] = (0..<200).map { ["name": .string(($0 % 2 == 0 ? "abc" : "xyz") + String($0))] }
        // `Locked`, not `Mutex`: ThreadSanitizer does not see Mutex's futex and reported a race here.
        let counts = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let count = documents.filter(selector.matches).count
            counts.withLock { $0.append(count) }
        }
        XCTAssertEqual(counts.withLock { $0 }, Array(repeating: 100, count: 8))
    }

    func testBeginsWith() throws {
        try assertMatches(
            #"{"id":{"$beginsWith":"user:"}}"#,
            [#"{"id":"user:1"}"#: true, #"{"id":"User:1"}"#: false, #"{"id":"user"}"#: false, #"{"id":["user:1"]}"#: false])
        try assertMatches(#"{"id":{"$beginsWith":""}}"#, [#"{"id":""}"#: true, #"{"id":1}"#: false])
    }

    // MARK: - Combinators

    func testAndOrNor() throws {
        try assertMatches(
            #"{"$and":[{"a":1},{"b":{"$gt":1}}]}"#, [#"{"a":1,"b":2}"#: true, #"{"a":1,"b":1}"#: false, #"{"b":2}"#: false])
        try assertMatches(#"{"$or":[{"a":1},{"b":1}]}"#, [#"{"a":1}"#: true, #"{"b":1}"#: true, #"{"a":2,"b":2}"#: false])
        try assertMatches(
            #"{"$nor":[{"a":1},{"b":1}]}"#,
            [#"{"a":2,"b":2}"#: true, #"{"a":1,"b":2}"#: false,
             #"{"b":2}"#: false])  // pushed down: a must exist and be != 1
        try assertMatches(#"{"$and":[]}"#, [#"{"a":1}"#: true])
        try assertMatches(#"{"$or":[]}"#, [#"{"a":1}"#: true])
        try assertMatches(#"{"a":{"$or":[1,2]}}"#, [#"{"a":2}"#: true, #"{"a":3}"#: false])
    }

    func testNotIsPushedDownToTheFields() throws {
        // {"$not": {"a": {"$gt": 10}}} becomes {"a": {"$lte": 10}}: a missing field fails.
        try assertMatches(#"{"$not":{"a":{"$gt":10}}}"#, [#"{"a":5}"#: true, #"{"a":11}"#: false, #"{}"#: false])
        try assertMatches(#"{"a":{"$not":{"$eq":1}}}"#, [#"{"a":2}"#: true, #"{"a":1}"#: false, #"{}"#: false])
        try assertMatches(#"{"$not":{"a":{"$exists":true}}}"#, [#"{}"#: true, #"{"a":1}"#: false])
        try assertMatches(
            #"{"$not":{"$and":[{"a":1},{"b":1}]}}"#,
            [#"{"a":1,"b":2}"#: true, #"{"a":1,"b":1}"#: false, #"{"a":2}"#: true, #"{}"#: false])
        try assertMatches(#"{"a":{"$not":{"$size":1}}}"#, [#"{"a":[1,2]}"#: true, #"{"a":[1]}"#: false, #"{}"#: false])
        try assertMatches(#"{"$not":{"$not":{"a":1}}}"#, [#"{"a":1}"#: true, #"{"a":2}"#: false])
        try assertMatches(#"{"a":{"$not":{"$in":[1,2]}}}"#, [#"{"a":3}"#: true, #"{"a":2}"#: false, #"{}"#: false])
    }

    func testNotInsideElemMatchIsPlainNegation() throws {
        // CouchDB does not normalize inside $elemMatch, so $not there is literal.
        try assertMatches(#"{"l":{"$elemMatch":{"$not":{"b":1}}}}"#, [#"{"l":[{"b":1},{"c":2}]}"#: true, #"{"l":[{"b":1}]}"#: false])
    }

    // MARK: - Invalid selectors

    func testInvalidSelectorsAreBadRequests() throws {
        try assertRejected(#"[1]"#, error: "invalid_selector_json", reasonContains: "must be a JSON object")
        try assertRejected(#""a""#, error: "invalid_selector_json", reasonContains: "must be a JSON object")
        try assertRejected(#"{"a":{"$foo":1}}"#, error: "invalid_operator", reasonContains: "$foo")
        try assertRejected(#"{"$and":{"a":1}}"#, error: "bad_arg", reasonContains: "$and")
        try assertRejected(#"{"$or":1}"#, error: "bad_arg", reasonContains: "$or")
        try assertRejected(#"{"$nor":"x"}"#, error: "bad_arg", reasonContains: "$nor")
        try assertRejected(#"{"$not":[1]}"#, error: "bad_arg", reasonContains: "$not")
        try assertRejected(#"{"a":{"$in":1}}"#, error: "bad_arg", reasonContains: "$in")
        try assertRejected(#"{"a":{"$nin":{}}}"#, error: "bad_arg", reasonContains: "$nin")
        try assertRejected(#"{"a":{"$all":"x"}}"#, error: "bad_arg", reasonContains: "$all")
        try assertRejected(#"{"a":{"$exists":1}}"#, error: "bad_arg", reasonContains: "$exists")
        try assertRejected(#"{"a":{"$type":1}}"#, error: "bad_arg", reasonContains: "$type")
        try assertRejected(#"{"a":{"$mod":[2]}}"#, error: "bad_arg", reasonContains: "$mod")
        try assertRejected(#"{"a":{"$mod":[2.5,1]}}"#, error: "bad_arg", reasonContains: "$mod")
        try assertRejected(#"{"a":{"$mod":[0,0]}}"#, error: "bad_arg", reasonContains: "$mod")
        try assertRejected(#"{"a":{"$size":-1}}"#, error: "bad_arg", reasonContains: "$size")
        try assertRejected(#"{"a":{"$size":"2"}}"#, error: "bad_arg", reasonContains: "$size")
        try assertRejected(#"{"a":{"$regex":"("}}"#, error: "bad_arg", reasonContains: "$regex")
        try assertRejected(#"{"a":{"$regex":5}}"#, error: "bad_arg", reasonContains: "$regex")
        try assertRejected(#"{"a":{"$beginsWith":5}}"#, error: "bad_arg", reasonContains: "$beginsWith")
        try assertRejected(#"{"a":{"$elemMatch":[1]}}"#, error: "bad_arg", reasonContains: "$elemMatch")
        try assertRejected(#"{"a":{"$allMatch":1}}"#, error: "bad_arg", reasonContains: "$allMatch")
        try assertRejected(#"{"a":{"$keyMapMatch":"k"}}"#, error: "bad_arg", reasonContains: "$keyMapMatch")
        try assertRejected(#"{"$where":"1"}"#, error: "not_supported", reasonContains: "$where")
        try assertRejected(#"{"$gt":1}"#, error: "invalid_selector", reasonContains: "missing a field name")
        try assertRejected(#"{"a..b":1}"#, error: "invalid_selector", reasonContains: "a..b")
    }

    /// Patterns whose backtracking is exponential (each took from 14 s to minutes on
    /// 25 characters with an unbounded engine) stop at PCRE2's limits and match nothing;
    /// the same patterns still match where a match is found quickly.
    func testCatastrophicRegexGivesUpAsNoMatch() throws {
        let hostile = String(repeating: "a", count: 40) + "!"
        // These can only fail on `hostile`; the engine must say so without trying every way.
        for pattern in [#"(a+){2,30}$"#, #"(.*a){12}$"#, #"(a+)+$"#, #"^(\\w*)*x"#, #"(a|b+)*c"#, #"([a-z]+){2,}$"#] {
            XCTAssertFalse(try selector(#"{"s":{"$regex":"\#(pattern)"}}"#).matches(["s": .string(hostile)]), pattern)
        }
        // These match the empty string at the end, after exponentially many tries from the start:
        // giving up there (no match, as CouchDB's PCRE does) and answering at all is what counts.
        for pattern in [#"(a|a)*$"#, #"(a|a?)+$"#, #"(\\w|a)*$"#, #"a*a*a*a*a*a*a*a*$"#, #"((ab)*)+$"#] {
            _ = try selector(#"{"s":{"$regex":"\#(pattern)"}}"#).matches(["s": .string(hostile)])
        }
        // A long string gets a smaller limit per starting position, so the whole search stays
        // bounded: 8,000 steps from each of 200,000 positions would be ~5 s; it gives up instead.
        let long = String(repeating: "a", count: 200_000) + "!"
        XCTAssertFalse(try selector(#"{"s":{"$regex":"(?:a|a){0,12}(?=!)"}}"#).matches(["s": .string(long)]))
        try assertMatches(#"{"s":{"$regex":"(a|a)*$"}}"#, [#"{"s":"aaab"}"#: true])
        try assertMatches(#"{"s":{"$regex":"(a+)+b"}}"#, [#"{"s":"aaab"}"#: true, #"{"s":"aaa"}"#: false])
    }
}

import Foundation
import JSON
import XCTest

/// Map/reduce views answered as CouchDB 3.5 answers them: every query below names the exact
/// rows it expects (key, value, id, doc), in order, written from CouchDB's documented semantics
/// and its source, not from this implementation:
///
/// - parameters and their aliases: `couch_mrview_http:parse_param/4`;
/// - key ranges, `inclusive_end` and the docid bounds: `couch_mrview_util:key_opts/2`
///   (`inclusive_end=false` excludes every row of the end key unless `endkey_docid` is given);
/// - `offset`: the rows before the first row answered, skipped ones included
///   (`fabric_view_map`: `min(total_rows, offset + skip)`); for an empty range, the rows before
///   where the range would start (`couch_btree:fold` stops there). Multi-key queries are
///   compared without `offset`: a cluster sums each shard's, so it names no position;
/// - the error bodies: `couch_mrview_util:validate_args/1` and `check_range/2` as of 3.5
///   ("Multi-key fetches …"; a single-element `keys` is `key`, apache/couchdb#4494), and
///   `chttpd_view` (`{"queries"}` only at `…/queries`);
/// - collation: the "Views Collation" page of the documentation (ICU for strings);
/// - the built-in reduces: `couch_query_servers:builtin_reduce/4`.
///
/// Objects are compared without regard to member order (JSON objects are unordered; a key's
/// member order still decides its collation, which the row order checks).
final class ViewConformanceTests: XCTestCase {
    // MARK: - Fixtures

    /// The colored documents; `h` (no color) and the design documents are in the database too and map to nothing.
    private static let colored: [(id: String, color: String, size: String, n: Int)] = [
        ("a", "red", "S", 1), ("b", "blue", "M", 2), ("c", "red", "M", 3), ("d", "green", "L", 4),
        ("e", "red", "S", 5), ("f", "blue", "S", 6), ("g", "green", "M", 7),
    ]

    private static let colorMap = "function (doc) { if (doc.color) emit(doc.color, doc.n); }"
    private static let pairMap = "function (doc) { if (doc.color) emit([doc.color, doc.size], doc.n); }"

    /// Several views in one design document (some sharing a map function, as CouchDB shares their index).
    private static let designD: JSON = ["views": [
        "by_color": ["map": .string(colorMap)],
        "by_color_size": ["map": .string(pairMap), "reduce": "_sum"],
        "count": ["map": .string(pairMap), "reduce": "_count"],
        "stats": ["map": .string(colorMap), "reduce": "_stats"],
        "pairs": ["map": "function (doc) { if (doc.color) emit(doc.color, [doc.n, 1]); }", "reduce": "_sum"],
        "ragged": ["map": "function (doc) { if (doc.color) emit(doc.color, doc.size === 'S' ? [doc.n] : [doc.n, 10]); }",
                   "reduce": "_sum"],
        "sizes": ["map": "function (doc) { if (doc.size) emit(doc.size, null); }", "reduce": "_approx_count_distinct"],
        "js_sum": ["map": .string(colorMap), "reduce": "function (keys, values, rereduce) { return sum(values); }"],
        "both": ["map": "function (doc) { if (doc.color) { emit(doc.color, 1); emit(doc.size, 2); } }"],
        "links": ["map": """
            function (doc) {
              if (doc.linked) emit(doc._id, doc.linkedRev ? {_id: doc.linked, _rev: doc.linkedRev} : {_id: doc.linked});
            }
            """],
    ]]

    /// A second design document with a view of the same name as one of d's.
    private static let designE: JSON = ["views": [
        "by_color": ["map": "function (doc) { if (doc.size) emit(doc.size, doc.color); }"],
    ]]

    private struct ColorDatabase {
        /// The database's URL, with the admin's credentials.
        let url: String
        /// Each document's revision as written by the fixture.
        let revs: [String: String]
    }

    /// A database holding the colored documents, `h`, and design documents d and e.
    private func colorDatabase(_ server: TestListener, name: String = "db") async throws -> ColorDatabase {
        let db = server.url + "/" + name
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        var docs: [JSON] = Self.colored.map {
            ["_id": .string($0.id), "color": .string($0.color), "size": .string($0.size), "n": .number(Double($0.n))]
        }
        docs.append(["_id": "h", "type": "other"])
        let revs = try await bulk(db, docs)
        try await put(db + "/_design/d", Self.designD)
        try await put(db + "/_design/e", Self.designE)
        return ColorDatabase(url: db, revs: revs)
    }

    /// Writes `docs` with `_bulk_docs`; their revisions by id.
    private func bulk(_ db: String, _ docs: [JSON]) async throws -> [String: String] {
        let answer = try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": .array(docs)])
        XCTAssertEqual(answer.status, 201, "\(answer.json)")
        var revs: [String: String] = [:]
        for result in answer.json.arrayValue ?? [] {
            guard let id = result["id"]?.stringValue, let rev = result["rev"]?.stringValue else {
                XCTFail("a document was not written: \(result)")
                continue
            }
            revs[id] = rev
        }
        return revs
    }

    /// PUTs `body` at `url`; the new revision.
    @discardableResult
    private func put(_ url: String, _ body: JSON) async throws -> String {
        let answer = try await HTTP.json(.PUT, url, body)
        XCTAssertEqual(answer.status, 201, "PUT \(url): \(answer.json)")
        return answer.json["rev"]?.stringValue ?? ""
    }

    /// The database's `update_seq` from `GET /db`.
    private func updateSeq(_ db: String) async throws -> JSON {
        let info = try await HTTP.json(.GET, db).json
        return try XCTUnwrap(info["update_seq"])
    }

    // MARK: - Expected answers

    private func row(_ id: String, _ key: JSON, _ value: JSON) -> JSON { ["id": .string(id), "key": key, "value": value] }

    private func row(_ id: String, _ key: JSON, _ value: JSON, doc: JSON) -> JSON {
        ["id": .string(id), "key": key, "value": value, "doc": doc]
    }

    private func colored(_ id: String) -> (id: String, color: String, size: String, n: Int) {
        Self.colored.first { $0.id == id }!
    }

    /// by_color's rows (key color, value n) of the colored documents `ids`, in that order.
    private func colorRows(_ ids: String...) -> [JSON] {
        ids.map { row($0, .string(colored($0).color), .number(Double(colored($0).n))) }
    }

    /// A colored document as the fixture wrote it.
    private func colorDoc(_ id: String, _ revs: [String: String]) -> JSON {
        let doc = colored(id)
        return ["_id": .string(id), "_rev": .string(revs[id] ?? "?"), "color": .string(doc.color), "size": .string(doc.size),
                "n": .number(Double(doc.n))]
    }

    /// A map view's answer; `offset: nil` leaves the offset out of the comparison (multi-key queries).
    private func mapped(_ total: Int, _ offset: Int?, _ rows: [JSON]) -> JSON {
        var object: JSON.Object = ["total_rows": .number(Double(total))]
        if let offset { object["offset"] = .number(Double(offset)) }
        object["rows"] = .array(rows)
        return .object(object)
    }

    /// A reduce view's answer: `{"rows": [{"key", "value"}, …]}`.
    private func reduced(_ rows: [(JSON, JSON)]) -> JSON {
        ["rows": .array(rows.map { JSON.object(["key": $0.0, "value": $0.1]) })]
    }

    private func withSeq(_ answer: JSON, _ seq: JSON) -> JSON {
        guard var object = answer.objectValue else { return answer }
        object["update_seq"] = seq
        return .object(object)
    }

    private func stats(_ sum: Double, _ count: Double, _ min: Double, _ max: Double, _ sumsqr: Double) -> JSON {
        ["sum": .number(sum), "count": .number(count), "min": .number(min), "max": .number(max), "sumsqr": .number(sumsqr)]
    }

    private func parseError(_ reason: String) -> JSON { ["error": "query_parse_error", "reason": .string(reason)] }

    // MARK: - Comparing

    /// The JSON with every object's members sorted by name.
    private func canonical(_ json: JSON) -> JSON {
        switch json {
        case .array(let items): .array(items.map(canonical))
        case .object(let object):
            .object(JSON.Object(object.members.sorted { $0.key < $1.key }.map { (key: $0.key, value: canonical($0.value)) }))
        default: json
        }
    }

    /// `actual` without the `offset` of view answers whose expected answer leaves it out.
    private func trimmed(_ actual: JSON, like expected: JSON) -> JSON {
        switch (actual, expected) {
        case (.object(let object), .object(let model)):
            var kept: [(key: String, value: JSON)] = []
            for (key, value) in object {
                if key == "offset", model["offset"] == nil, model["total_rows"] != nil { continue }
                kept.append((key, model[key].map { trimmed(value, like: $0) } ?? value))
            }
            return .object(JSON.Object(kept))
        case (.array(let items), .array(let models)) where items.count == models.count:
            return .array(zip(items, models).map { trimmed($0, like: $1) })
        default:
            return actual
        }
    }

    private func encoded(_ query: String) -> String {
        let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~&=")
        return query.addingPercentEncoding(withAllowedCharacters: unreserved)!
    }

    /// GET `/db/_design/<view>?<query>` (the query written plainly, encoded here) answers `expected` with `status`.
    private func check(_ db: String, _ view: String, _ query: String, _ expected: JSON, status: Int = 200,
                       file: StaticString = #filePath, line: UInt = #line) async throws {
        let url = db + "/_design/" + view + (query.isEmpty ? "" : "?" + encoded(query))
        let answer = try await HTTP.json(.GET, url)
        XCTAssertEqual(answer.status, status, "GET \(view)?\(query): \(answer.json)", file: file, line: line)
        XCTAssertEqual(canonical(trimmed(answer.json, like: expected)), canonical(expected), "GET \(view)?\(query)", file: file, line: line)
    }

    /// POST `body` to `/db/_design/<path>` answers `expected` with `status`.
    private func checkPost(_ db: String, _ path: String, _ body: JSON, _ expected: JSON, status: Int = 200,
                           file: StaticString = #filePath, line: UInt = #line) async throws {
        let answer = try await HTTP.json(.POST, db + "/_design/" + path, body)
        XCTAssertEqual(answer.status, status, "POST \(path) \(body): \(answer.json)", file: file, line: line)
        XCTAssertEqual(canonical(trimmed(answer.json, like: expected)), canonical(expected), "POST \(path) \(body)", file: file, line: line)
    }

    // MARK: - Map queries

    func testMapQueriesSelectRowsByKeyRangeDirectionLimitAndSkip() async throws {
        let server = try await startListener()
        let db = try await colorDatabase(server).url
        // by_color in collation order: blue (b, f), green (d, g), red (a, c, e); within a key, by docid.
        let cases: [(String, JSON)] = [
            ("", mapped(7, 0, colorRows("b", "f", "d", "g", "a", "c", "e"))),
            (#"key="green""#, mapped(7, 2, colorRows("d", "g"))),
            // No row has the key: the range is empty where "purple" would be, after blue and green.
            (#"key="purple""#, mapped(7, 4, [])),
            (#"startkey="green""#, mapped(7, 2, colorRows("d", "g", "a", "c", "e"))),
            (#"endkey="green""#, mapped(7, 0, colorRows("b", "f", "d", "g"))),
            (#"startkey="c"&endkey="h""#, mapped(7, 2, colorRows("d", "g"))),
            (#"start_key="blue"&end_key="green""#, mapped(7, 0, colorRows("b", "f", "d", "g"))),
            // inclusive_end=false leaves out every row of the end key.
            (#"endkey="green"&inclusive_end=false"#, mapped(7, 0, colorRows("b", "f"))),
            (#"startkey="green"&endkey="red"&inclusive_end=true"#, mapped(7, 2, colorRows("d", "g", "a", "c", "e"))),
            (#"startkey="blue"&endkey="blue"&inclusive_end=false"#, mapped(7, 0, [])),
            ("descending=true", mapped(7, 0, colorRows("e", "c", "a", "g", "d", "f", "b"))),
            // Descending, the offset counts the rows before in descending order (red's three).
            (#"descending=true&startkey="green""#, mapped(7, 3, colorRows("g", "d", "f", "b"))),
            (#"descending=true&endkey="green""#, mapped(7, 0, colorRows("e", "c", "a", "g", "d"))),
            (#"descending=true&startkey="red"&endkey="green"&inclusive_end=false"#, mapped(7, 0, colorRows("e", "c", "a"))),
            ("limit=3", mapped(7, 0, colorRows("b", "f", "d"))),
            ("skip=2&limit=2", mapped(7, 2, colorRows("d", "g"))),
            ("skip=5", mapped(7, 5, colorRows("c", "e"))),
            // Skipping past the end: offset is min(total_rows, offset + skip).
            ("skip=10", mapped(7, 7, [])),
            ("limit=0", mapped(7, 0, [])),
            (#"startkey="green"&limit=0"#, mapped(7, 2, [])),
            ("descending=true&skip=1&limit=2", mapped(7, 1, colorRows("c", "a"))),
            // keys: each key's rows in the order the keys are given; a key without rows adds none.
            (#"keys=["red","blue"]"#, mapped(7, nil, colorRows("a", "c", "e", "b", "f"))),
            (#"keys=["purple","green"]"#, mapped(7, nil, colorRows("d", "g"))),
            // skip and limit count across all the keys' rows.
            (#"keys=["red","blue"]&skip=2&limit=2"#, mapped(7, nil, colorRows("e", "b"))),
        ]
        for (query, expected) in cases {
            try await check(db, "d/_view/by_color", query, expected)
        }

        // A document emitting twice is two rows; strings collate as ICU does, not by bytes
        // ("L" after "green", "red" between "M" and "S").
        try await check(db, "d/_view/both", #"startkey="h"&endkey="r""#, mapped(14, 4, [
            row("d", "L", 2), row("b", "M", 2), row("c", "M", 2), row("g", "M", 2),
        ]))
        try await check(db, "d/_view/both", #"key="S""#, mapped(14, 11, [row("a", "S", 2), row("e", "S", 2), row("f", "S", 2)]))
        // Another design document's view of the same name is its own.
        try await check(db, "e/_view/by_color", #"key="S""#, mapped(7, 4, [row("a", "S", "red"), row("e", "S", "red"), row("f", "S", "blue")]))
    }

    func testDocidBoundsSelectAmongTheRowsOfTheStartAndEndKeys() async throws {
        let server = try await startListener()
        let db = try await colorDatabase(server).url
        // The docids are plain strings, not JSON (parse_param: couch_util:to_binary(Val)).
        let cases: [(String, JSON)] = [
            (#"startkey="red"&startkey_docid=c"#, mapped(7, 5, colorRows("c", "e"))),
            (#"endkey="green"&endkey_docid=d"#, mapped(7, 0, colorRows("b", "f", "d"))),
            (#"startkey="green"&startkey_docid=e&endkey="red"&endkey_docid=c"#, mapped(7, 3, colorRows("g", "a", "c"))),
            // With an endkey_docid, inclusive_end=false leaves out only that row and those after it.
            (#"endkey="green"&endkey_docid=d&inclusive_end=false"#, mapped(7, 0, colorRows("b", "f"))),
            (#"endkey="green"&endkey_docid=e&inclusive_end=false"#, mapped(7, 0, colorRows("b", "f", "d"))),
            // Descending, the docid bounds run backwards too.
            (#"descending=true&startkey="red"&startkey_docid=c"#, mapped(7, 1, colorRows("c", "a", "g", "d", "f", "b"))),
            (#"descending=true&startkey="green"&startkey_docid=d&endkey="blue"&endkey_docid=f"#, mapped(7, 4, colorRows("d", "f"))),
            // The aliases start_key_doc_id and end_key_doc_id.
            (#"startkey="red"&start_key_doc_id=e"#, mapped(7, 6, colorRows("e"))),
            (#"end_key="green"&end_key_doc_id=d"#, mapped(7, 0, colorRows("b", "f", "d"))),
            // key is startkey and endkey at once, so both docid bounds apply to its rows.
            (#"key="red"&startkey_docid=b&endkey_docid=d"#, mapped(7, 5, colorRows("c"))),
        ]
        for (query, expected) in cases {
            try await check(db, "d/_view/by_color", query, expected)
        }
    }

    // MARK: - Collation

    /// Keys of every type in CouchDB's documented collation order.
    private static let collated: [JSON] = [
        nil, false, true,
        -2.5, 0, 1, 2, 3.5, 10,
        "1", "10", "2", "a", "A", "aa", "b", "B", "ba", "bb",
        ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"],
        ["a": 1], ["a": 2], ["b": 1], ["b": 2], ["b": 2, "a": 1], ["b": 2, "c": 2],
    ]

    /// The id of the document emitting `collated[position]`: ids run in another order than the keys.
    private func collatedID(_ position: Int) -> String { String(format: "m%02d", (position * 7) % 31) }

    private func collatedRows(_ positions: some Sequence<Int>) -> [JSON] {
        positions.map { row(collatedID($0), Self.collated[$0], nil) }
    }

    func testMixedTypeKeysFollowCouchDBCollation() async throws {
        let server = try await startListener()
        let db = server.url + "/mixed"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        // An object key is built by the map function from [name, value] pairs, so that its member
        // order is the one written here whatever the store does with document bodies' members.
        _ = try await bulk(db, Self.collated.indices.map { position -> JSON in
            let id = JSON.string(collatedID(position))
            guard case .object(let object) = Self.collated[position] else { return ["_id": id, "k": Self.collated[position]] }
            return ["_id": id, "pairs": .array(object.members.map { [.string($0.key), $0.value] })]
        })
        try await put(db + "/_design/m", ["views": ["keys": ["map": """
            function (doc) {
              if (doc.pairs) {
                var key = {};
                doc.pairs.forEach(function (pair) { key[pair[0]] = pair[1]; });
                emit(key, null);
              } else if ('k' in doc) {
                emit(doc.k, null);
              }
            }
            """]]])
        let count = Self.collated.count
        let cases: [(String, JSON)] = [
            // null < false < true < numbers < strings (a < A < aa < b < B) < arrays < objects.
            ("", mapped(count, 0, collatedRows(0..<count))),
            ("descending=true", mapped(count, 0, collatedRows((0..<count).reversed()))),
            ("startkey=true&endkey=10", mapped(count, 2, collatedRows(2...8))),
            // Strings: digits before letters, character by character ("10" < "2"), lower case just before upper.
            (#"startkey="1"&endkey="b""#, mapped(count, 9, collatedRows(9...15))),
            // [] is the least array: every string is before it.
            (#"startkey="B"&endkey=[]"#, mapped(count, 16, collatedRows(16...18))),
            // A compound key's prefix: ["b"] up to ["b", {}] holds every array starting with "b".
            (#"startkey=["b"]&endkey=["b",{}]"#, mapped(count, 20, collatedRows(20...24))),
            (#"startkey=["b","c"]&endkey=["b","d"]&inclusive_end=false"#, mapped(count, 21, collatedRows(21...22))),
            // {} is the least object.
            ("startkey={}", mapped(count, 25, collatedRows(25...30))),
            ("startkey={}&descending=true", mapped(count, 6, collatedRows((0...24).reversed()))),
            // Member order is part of an object key.
            (#"key={"b":2,"a":1}"#, mapped(count, 29, collatedRows([29]))),
            // "A" and "a" are different keys.
            (#"key="A""#, mapped(count, 13, collatedRows([13]))),
            ("key=3.5", mapped(count, 7, collatedRows([7]))),
            // null is a key like any other.
            ("startkey=null&endkey=false&inclusive_end=false", mapped(count, 0, collatedRows([0]))),
            ("endkey=0&inclusive_end=false", mapped(count, 0, collatedRows(0...3))),
            (#"keys=[{"a":2},null,["b","c"],"aa"]"#, mapped(count, nil, collatedRows([26, 0, 21, 14]))),
        ]
        for (query, expected) in cases {
            try await check(db, "m/_view/keys", query, expected)
        }
    }

    // MARK: - Documents

    func testIncludeDocsAddsEachRowsDocumentOrTheDocumentItsValueLinks() async throws {
        let server = try await startListener()
        let fixture = try await colorDatabase(server)
        let db = fixture.url
        var revs = fixture.revs
        // "gone" is written then deleted; l4 links a's first revision, which a's update then replaces.
        let goneRev = try await put(db + "/gone", ["n": 0])
        try await assertEqual(try await HTTP.json(.DELETE, db + "/gone?rev=" + goneRev).status, 200)
        let firstA = try XCTUnwrap(revs["a"])
        _ = try await bulk(db, [
            ["_id": "l1", "linked": "d"], ["_id": "l2", "linked": "nowhere"], ["_id": "l3", "linked": "gone"],
            ["_id": "l4", "linked": "a", "linkedRev": .string(firstA)],
        ])
        revs["a"] = try await put(db + "/a", ["_rev": .string(firstA), "color": "red", "size": "S", "n": 11])
        let newA: JSON = ["_id": "a", "_rev": .string(revs["a"]!), "color": "red", "size": "S", "n": 11]
        let oldA: JSON = ["_id": "a", "_rev": .string(firstA), "color": "red", "size": "S", "n": 1]

        try await check(db, "d/_view/by_color", #"key="green"&include_docs=true"#, mapped(7, 2, [
            row("d", "green", 4, doc: colorDoc("d", revs)), row("g", "green", 7, doc: colorDoc("g", revs)),
        ]))
        try await check(db, "d/_view/by_color", #"key="red"&include_docs=true"#, mapped(7, 4, [
            row("a", "red", 11, doc: newA), row("c", "red", 3, doc: colorDoc("c", revs)), row("e", "red", 5, doc: colorDoc("e", revs)),
        ]))
        try await check(db, "d/_view/by_color", "descending=true&limit=1&include_docs=true", mapped(7, 0, [
            row("e", "red", 5, doc: colorDoc("e", revs)),
        ]))
        // A value {"_id"} links that document; {"_id", "_rev"} that revision; a missing or deleted one is null.
        try await check(db, "d/_view/links", "include_docs=true", mapped(4, 0, [
            row("l1", "l1", ["_id": "d"], doc: colorDoc("d", revs)),
            row("l2", "l2", ["_id": "nowhere"], doc: nil),
            row("l3", "l3", ["_id": "gone"], doc: nil),
            row("l4", "l4", ["_id": "a", "_rev": .string(firstA)], doc: oldA),
        ]))
        try await check(db, "d/_view/links", "include_docs=false&limit=1", mapped(4, 0, [row("l1", "l1", ["_id": "d"])]))
        // A reduce view queried with reduce=false is a map query: include_docs is allowed.
        try await check(db, "d/_view/by_color_size", #"reduce=false&include_docs=true&key=["red","M"]"#, mapped(7, 4, [
            row("c", ["red", "M"], 3, doc: colorDoc("c", revs)),
        ]))
    }

    func testConflictsNeverChangeWhatIsMappedAndConflictsTrueListsThem() async throws {
        let server = try await startListener()
        let db = server.url + "/db"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        try await put(db + "/_design/d", Self.designD)
        let revs = try await bulk(db, [
            ["_id": "x", "color": "red", "size": "S", "n": 1], ["_id": "y", "color": "blue", "size": "M", "n": 2],
        ])
        try await check(db, "d/_view/by_color", "", mapped(2, 0, [row("y", "blue", 2), row("x", "red", 1)]))

        // Replicated revisions: x gets a losing branch (the least revision of generation 1),
        // y a winning one (generation 2 on a branch of its own).
        let low = "1-" + String(repeating: "0", count: 32)
        let high = "2-" + String(repeating: "f", count: 32)
        let replicated = try await HTTP.json(.POST, db + "/_bulk_docs", ["new_edits": false, "docs": [
            ["_id": "x", "_rev": .string(low), "color": "purple", "size": "S", "n": 100],
            ["_id": "y", "_rev": .string(high), "_revisions": ["start": 2, "ids": [.string(String(repeating: "f", count: 32)),
                                                                                   .string(String(repeating: "e", count: 32))]],
             "color": "green", "size": "M", "n": 20],
        ]])
        XCTAssertEqual(replicated.status, 201, "\(replicated.json)")
        let x: JSON = ["_id": "x", "_rev": .string(revs["x"]!), "color": "red", "size": "S", "n": 1]
        let y: JSON = ["_id": "y", "_rev": .string(high), "color": "green", "size": "M", "n": 20]
        var xConflicted = x.objectValue!
        xConflicted["_conflicts"] = [.string(low)]
        var yConflicted = y.objectValue!
        yConflicted["_conflicts"] = [.string(revs["y"]!)]

        // Only each document's winning revision is mapped.
        let cases: [(String, JSON)] = [
            ("", mapped(2, 0, [row("y", "green", 20), row("x", "red", 1)])),
            ("conflicts=true", mapped(2, 0, [row("y", "green", 20), row("x", "red", 1)])),
            (#"key="purple""#, mapped(2, 1, [])),
            ("include_docs=true", mapped(2, 0, [row("y", "green", 20, doc: y), row("x", "red", 1, doc: x)])),
            ("include_docs=true&conflicts=true", mapped(2, 0, [
                row("y", "green", 20, doc: .object(yConflicted)), row("x", "red", 1, doc: .object(xConflicted)),
            ])),
        ]
        for (query, expected) in cases {
            try await check(db, "d/_view/by_color", query, expected)
        }
        try await check(db, "d/_view/stats", "", reduced([(nil, stats(21, 2, 1, 20, 401))]))
    }

    func testDeletedDocumentsRowsVanishAndUpdatedDocumentsRowsChange() async throws {
        let server = try await startListener()
        let fixture = try await colorDatabase(server)
        let db = fixture.url
        try await check(db, "d/_view/by_color", "", mapped(7, 0, colorRows("b", "f", "d", "g", "a", "c", "e")))
        try await check(db, "d/_view/by_color_size", "group_level=1", reduced([(["blue"], 8), (["green"], 11), (["red"], 9)]))

        try await assertEqual(try await HTTP.json(.DELETE, db + "/c?rev=" + fixture.revs["c"]!).status, 200)
        try await put(db + "/d", ["_rev": .string(fixture.revs["d"]!), "color": "red", "size": "L", "n": 40])
        try await put(db + "/e", ["_rev": .string(fixture.revs["e"]!), "type": "other"])
        try await put(db + "/i", ["color": "amber", "size": "S", "n": 8])

        try await check(db, "d/_view/by_color", "", mapped(6, 0, [
            row("i", "amber", 8), row("b", "blue", 2), row("f", "blue", 6), row("g", "green", 7), row("a", "red", 1), row("d", "red", 40),
        ]))
        try await check(db, "d/_view/by_color", #"key="green""#, mapped(6, 3, [row("g", "green", 7)]))
        try await check(db, "d/_view/by_color_size", "group=true", reduced([
            (["amber", "S"], 8), (["blue", "M"], 2), (["blue", "S"], 6), (["green", "M"], 7), (["red", "L"], 40), (["red", "S"], 1),
        ]))
        try await check(db, "d/_view/by_color_size", "group_level=1", reduced([(["amber"], 8), (["blue"], 8), (["green"], 7), (["red"], 41)]))
        try await check(db, "d/_view/count", "", reduced([(nil, 6)]))
    }

    // MARK: - Reduce

    func testSumReduceGroupsByExactKeyAndByLevelOverAnyRange() async throws {
        let server = try await startListener()
        let db = try await colorDatabase(server).url
        // by_color_size's rows: [blue,M] b 2, [blue,S] f 6, [green,L] d 4, [green,M] g 7, [red,M] c 3, [red,S] a 1, [red,S] e 5.
        let exact: [(JSON, JSON)] = [
            (["blue", "M"], 2), (["blue", "S"], 6), (["green", "L"], 4), (["green", "M"], 7), (["red", "M"], 3), (["red", "S"], 6),
        ]
        let cases: [(String, JSON)] = [
            ("", reduced([(nil, 28)])),
            ("group=true", reduced(exact)),
            ("group_level=1", reduced([(["blue"], 8), (["green"], 11), (["red"], 9)])),
            ("group_level=2", reduced(exact)),
            // A key shorter than the level is its own group.
            ("group_level=3", reduced(exact)),
            ("group_level=0", reduced([(nil, 28)])),
            (#"startkey=["red"]&endkey=["red",{}]"#, reduced([(nil, 9)])),
            (#"startkey=["red"]&endkey=["red",{}]&group=true"#, reduced([(["red", "M"], 3), (["red", "S"], 6)])),
            ("group_level=1&descending=true", reduced([(["red"], 9), (["green"], 11), (["blue"], 8)])),
            ("group=true&descending=true&limit=2", reduced([(["red", "S"], 6), (["red", "M"], 3)])),
            (#"key=["red","S"]"#, reduced([(nil, 6)])),
            // A single-element keys is key (apache/couchdb#4494, in 3.5): no group=true needed.
            (#"keys=[["red","S"]]"#, reduced([(nil, 6)])),
            (#"keys=[["red","S"]]&group_level=1"#, reduced([(["red"], 6)])),
            // With group=true, one row per asked key that has rows, in the keys' order.
            (#"keys=[["red","S"],["blue","M"],["red","X"]]&group=true"#, reduced([(["red", "S"], 6), (["blue", "M"], 2)])),
            ("group=true&skip=1&limit=2", reduced([(["blue", "S"], 6), (["green", "L"], 4)])),
            ("group_level=1&limit=1", reduced([(["blue"], 8)])),
            // The range cuts groups: only its rows are reduced.
            (#"group_level=1&startkey=["blue","S"]&endkey=["red","M"]"#, reduced([(["blue"], 6), (["green"], 11), (["red"], 3)])),
            (#"group=true&endkey=["green","M"]&inclusive_end=false"#, reduced([(["blue", "M"], 2), (["blue", "S"], 6), (["green", "L"], 4)])),
            (#"startkey=["yellow"]"#, reduced([])),
            (#"reduce=false&startkey=["red"]&endkey=["red",{}]"#, mapped(7, 4, [
                row("c", ["red", "M"], 3), row("a", ["red", "S"], 1), row("e", ["red", "S"], 5),
            ])),
        ]
        for (query, expected) in cases {
            try await check(db, "d/_view/by_color_size", query, expected)
        }
    }

    func testBuiltInReducesAndAJavaScriptReduce() async throws {
        let server = try await startListener()
        let db = try await colorDatabase(server).url
        let cases: [(String, String, JSON)] = [
            ("count", "", reduced([(nil, 7)])),
            ("count", "group_level=1", reduced([(["blue"], 2), (["green"], 2), (["red"], 3)])),
            ("count", #"group=true&startkey=["red"]&endkey=["red",{}]"#, reduced([(["red", "M"], 1), (["red", "S"], 2)])),
            ("stats", "", reduced([(nil, stats(28, 7, 1, 7, 140))])),
            ("stats", "group=true", reduced([
                ("blue", stats(8, 2, 2, 6, 40)), ("green", stats(11, 2, 4, 7, 65)), ("red", stats(9, 3, 1, 5, 35)),
            ])),
            ("stats", #"key="green""#, reduced([(nil, stats(11, 2, 4, 7, 65))])),
            // _sum adds arrays element by element ...
            ("pairs", "", reduced([(nil, [28, 7])])),
            ("pairs", "group=true", reduced([("blue", [8, 2]), ("green", [11, 2]), ("red", [9, 3])])),
            // ... a shorter array's missing elements counting as nothing.
            ("ragged", "", reduced([(nil, [28, 40])])),
            ("ragged", "group=true", reduced([("blue", [8, 10]), ("green", [11, 20]), ("red", [9, 10])])),
            // _approx_count_distinct counts distinct keys (exactly, for so few).
            ("sizes", "", reduced([(nil, 3)])),
            ("sizes", "group=true", reduced([("L", 1), ("M", 1), ("S", 1)])),
            ("sizes", #"startkey="M""#, reduced([(nil, 2)])),
            ("js_sum", "", reduced([(nil, 28)])),
            ("js_sum", "group=true", reduced([("blue", 8), ("green", 11), ("red", 9)])),
            ("js_sum", #"key="red""#, reduced([(nil, 9)])),
            ("js_sum", #"reduce=false&key="blue""#, mapped(7, 0, colorRows("b", "f"))),
        ]
        for (view, query, expected) in cases {
            try await check(db, "d/_view/" + view, query, expected)
        }
    }

    /// A reduce that can tell reduce from rereduce: called with `rereduce` false, `keys` are the
    /// rows' `[key, docid]` pairs and `values` the emitted ones; with `rereduce` true, `keys` is
    /// null and `values` are earlier results. Any call made otherwise shows in `wrong`.
    private static let checkingReduce = """
        function (keys, values, rereduce) {
          var out = {count: 0, total: 0, wrong: 0};
          if (rereduce) {
            if (keys !== null) out.wrong += 1;
            for (var i = 0; i < values.length; i++) {
              out.count += values[i].count; out.total += values[i].total; out.wrong += values[i].wrong;
            }
          } else {
            for (var j = 0; j < values.length; j++) {
              var k = keys[j];
              if (!Array.isArray(k) || k.length !== 2 || typeof k[1] !== 'string' || k[1].charAt(0) !== 'n'
                  || !Array.isArray(k[0]) || k[0][0] !== values[j] % 5) out.wrong += 1;
              out.count += 1; out.total += values[j];
            }
          }
          return out;
        }
        """

    func testJavaScriptReduceWithRereduceIsRightOverHundredsOfRows() async throws {
        let server = try await startListener()
        let db = server.url + "/big"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        // n000 … n299 with i = 0 … 299, each emitting [i % 5, i % 2] → i.
        _ = try await bulk(db, (0..<300).map { ["_id": .string(String(format: "n%03d", $0)), "i": .number(Double($0))] })
        let map = "function (doc) { if (typeof doc.i === 'number') emit([doc.i % 5, doc.i % 2], doc.i); }"
        try await put(db + "/_design/big", ["views": [
            "js": ["map": .string(map), "reduce": .string(Self.checkingReduce)],
            "stats": ["map": .string(map), "reduce": "_stats"],
            "count": ["map": .string(map), "reduce": "_count"],
        ]])
        func result(_ count: Double, _ total: Double) -> JSON { ["count": .number(count), "total": .number(total), "wrong": 0] }
        // Group [r] holds i ≡ r (mod 5): 60 rows totalling 8850 + 60r. Group [r, p] holds i ≡ c (mod 10)
        // for the c with c % 5 = r and c % 2 = p: 30 rows totalling 4350 + 30c.
        let cases: [(String, String, JSON)] = [
            ("js", "", reduced([(nil, result(300, 44850))])),
            ("js", "group_level=1", reduced([
                ([0], result(60, 8850)), ([1], result(60, 8910)), ([2], result(60, 8970)), ([3], result(60, 9030)), ([4], result(60, 9090)),
            ])),
            ("js", "group=true", reduced([
                ([0, 0], result(30, 4350)), ([0, 1], result(30, 4500)), ([1, 0], result(30, 4530)), ([1, 1], result(30, 4380)),
                ([2, 0], result(30, 4410)), ([2, 1], result(30, 4560)), ([3, 0], result(30, 4590)), ([3, 1], result(30, 4440)),
                ([4, 0], result(30, 4470)), ([4, 1], result(30, 4620)),
            ])),
            // A range that starts and ends inside groups.
            ("js", "startkey=[1,1]&endkey=[4,0]", reduced([(nil, result(180, 26850))])),
            ("js", "startkey=[2]&endkey=[3,{}]&group_level=1", reduced([([2], result(60, 8970)), ([3], result(60, 9030))])),
            ("js", "group=true&skip=2&limit=3", reduced([([1, 0], result(30, 4530)), ([1, 1], result(30, 4380)), ([2, 0], result(30, 4410))])),
            ("js", "group=true&descending=true&limit=2", reduced([([4, 1], result(30, 4620)), ([4, 0], result(30, 4470))])),
            ("stats", "", reduced([(nil, stats(44850, 300, 0, 299, 8_955_050))])),
            // i = 0, 5, …, 295: the sum of squares is 25 · (0² + … + 59²).
            ("stats", "startkey=[0]&endkey=[0,{}]", reduced([(nil, stats(8850, 60, 0, 295, 1_755_250))])),
            ("count", "", reduced([(nil, 300)])),
            ("count", "group_level=1&descending=true", reduced([([4], 60), ([3], 60), ([2], 60), ([1], 60), ([0], 60)])),
            ("js", "reduce=false&limit=3", mapped(300, 0, [row("n000", [0, 0], 0), row("n010", [0, 0], 10), row("n020", [0, 0], 20)])),
            ("js", "reduce=false&startkey=[4,1]&skip=28", mapped(300, 298, [row("n289", [4, 1], 289), row("n299", [4, 1], 299)])),
        ]
        for (view, query, expected) in cases {
            try await check(db, "big/_view/" + view, query, expected)
        }
    }

    // MARK: - POST

    func testPostedKeysAndMultipleQueries() async throws {
        let server = try await startListener()
        let db = try await colorDatabase(server).url
        try await checkPost(db, "d/_view/by_color", ["keys": ["red", "blue"]], mapped(7, nil, colorRows("a", "c", "e", "b", "f")))
        // The query string's parameters apply to posted keys.
        try await checkPost(db, "d/_view/by_color?limit=4", ["keys": ["red", "blue"]], mapped(7, nil, colorRows("a", "c", "e", "b")))
        try await checkPost(db, "d/_view/by_color_size?group=true", ["keys": [["green", "M"], ["blue", "S"]]],
                            reduced([(["green", "M"], 7), (["blue", "S"], 6)]))
        try await checkPost(db, "d/_view/by_color_size", ["keys": [["green", "M"], ["blue", "S"]]],
                            parseError("Multi-key fetches for reduce views must use `group=true`"), status: 400)
        // One posted key is key (apache/couchdb#4494).
        try await checkPost(db, "d/_view/by_color_size", ["keys": [["green", "M"]]], reduced([(nil, 7)]))
        // The body carries query parameters too, as JSON values (couch_mrview_http:parse_body_and_query/3).
        try await checkPost(db, "d/_view/by_color_size", ["keys": [["green", "M"], ["blue", "S"]], "group": true],
                            reduced([(["green", "M"], 7), (["blue", "S"], 6)]))
        try await checkPost(db, "d/_view/by_color", ["keys": ["red", "blue"], "limit": 4, "descending": false],
                            mapped(7, nil, colorRows("a", "c", "e", "b")))

        // Each query's parameters are JSON values, not strings; results come in the queries' order.
        try await checkPost(db, "d/_view/by_color/queries", ["queries": [
            [:], ["key": "green"], ["startkey": "green", "skip": 1, "limit": 2], ["descending": true, "limit": 2],
            ["keys": ["red", "blue"], "limit": 4],
        ]], ["results": [
            mapped(7, 0, colorRows("b", "f", "d", "g", "a", "c", "e")),
            mapped(7, 2, colorRows("d", "g")),
            mapped(7, 3, colorRows("g", "a")),
            mapped(7, 0, colorRows("e", "c")),
            mapped(7, nil, colorRows("a", "c", "e", "b")),
        ]])
        try await checkPost(db, "d/_view/by_color_size/queries", ["queries": [
            [:], ["group_level": 1], ["reduce": false, "limit": 1], ["group": true, "keys": [["red", "S"]]],
        ]], ["results": [
            reduced([(nil, 28)]),
            reduced([(["blue"], 8), (["green"], 11), (["red"], 9)]),
            mapped(7, 0, [row("b", ["blue", "M"], 2)]),
            reduced([(["red", "S"], 6)]),
        ]])
        // CouchDB 3 takes {"queries"} only at …/queries (chttpd_view:assert_no_queries_param, apache/couchdb#2168).
        try await checkPost(db, "d/_view/by_color", ["queries": [["key": "red", "limit": 1]]],
                            ["error": "bad_request", "reason": "The `queries` parameter is no longer supported at this endpoint"], status: 400)
    }

    // MARK: - Stale views

    func testUpdateFalseAndLazyAnswerFromTheIndexAsItIsAndUpdateSeqSaysHowFar() async throws {
        let server = try await startListener()
        let db = try await colorDatabase(server).url
        let all = colorRows("b", "f", "d", "g", "a", "c", "e")
        let before = try await updateSeq(db)
        try await check(db, "d/_view/by_color", "update_seq=true", withSeq(mapped(7, 0, all), before))

        try await put(db + "/i", ["color": "amber", "size": "S", "n": 8])
        let after = try await updateSeq(db)
        XCTAssertNotEqual(before, after)
        let cases: [(String, String, JSON)] = [
            ("by_color", "update=false&update_seq=true", withSeq(mapped(7, 0, all), before)),
            ("by_color", #"update=false&key="amber""#, mapped(7, 0, [])),
            ("by_color", "stale=ok", mapped(7, 0, all)),
            // The views of one design document are one index: none of them has seen "i".
            ("by_color_size", "update=false", reduced([(nil, 28)])),
            ("by_color_size", "update=false&update_seq=true", withSeq(reduced([(nil, 28)]), before)),
            // lazy answers from the index as it is, then updates it.
            ("by_color", "update=lazy", mapped(7, 0, all)),
        ]
        for (view, query, expected) in cases {
            try await check(db, "d/_view/" + view, query, expected)
        }
        try await waitUntil("the index is updated after update=lazy") {
            try await HTTP.json(.GET, db + "/_design/d/_view/by_color?update=false").json["total_rows"] == 8
        }
        let withAmber = [row("i", "amber", 8)] + all
        try await check(db, "d/_view/by_color", "update=false&update_seq=true", withSeq(mapped(8, 0, withAmber), after))
        try await check(db, "d/_view/by_color", "update=true&update_seq=true", withSeq(mapped(8, 0, withAmber), after))
        try await check(db, "d/_view/by_color_size", "update_seq=true", withSeq(reduced([(nil, 36)]), after))
    }

    // MARK: - Errors

    func testInvalidQueriesGetCouchDBsErrors() async throws {
        let server = try await startListener()
        let db = try await colorDatabase(server).url
        try await put(db + "/_design/plain", ["language": "javascript"])
        let grouping = parseError("Invalid use of grouping on a map view.")
        let multiKey = parseError("Multi-key fetches for reduce views must use `group=true`")
        let cases: [(String, String, Int, JSON)] = [
            ("d/_view/by_color", "reduce=true", 400, parseError("Reduce is invalid for map-only views.")),
            ("d/_view/by_color", "group=true", 400, grouping),
            ("d/_view/by_color", "group_level=1", 400, grouping),
            // reduce=false makes the query a map query (set_view_type), and grouping is refused for those.
            ("d/_view/by_color_size", "reduce=false&group=true", 400, grouping),
            (#"d/_view/by_color_size"#, #"keys=[["red","S"],["blue","M"]]"#, 400, multiKey),
            // Only exact grouping (group=true) takes several keys.
            ("d/_view/by_color_size", #"keys=[["red","S"],["blue","M"]]&group_level=1"#, 400, multiKey),
            ("d/_view/by_color_size", "include_docs=true", 400, parseError("`include_docs` is invalid for reduce")),
            ("d/_view/by_color_size", "conflicts=true", 400, parseError("`conflicts` is invalid for reduce views.")),
            ("d/_view/by_color", #"startkey="z"&endkey="a""#, 400,
             parseError("No rows can match your key range, reverse your start_key and end_key or set descending=true")),
            ("d/_view/by_color", #"startkey="a"&endkey="z"&descending=true"#, 400,
             parseError("No rows can match your key range, reverse your start_key and end_key or set descending=false")),
            ("d/_view/by_color_size", #"startkey=["red",{}]&endkey=["red"]&group=true"#, 400,
             parseError("No rows can match your key range, reverse your start_key and end_key or set descending=true")),
            ("d/_view/by_color", #"keys=["red","blue"]&key="red""#, 400,
             parseError("`keys` is incompatible with `key`, `start_key` and `end_key`")),
            ("d/_view/nope", "", 404, ["error": "not_found", "reason": "missing_named_view"]),
            ("plain/_view/any", "", 404, ["error": "not_found", "reason": "missing_named_view"]),
            ("nope/_view/by_color", "", 404, ["error": "not_found", "reason": "missing"]),
        ]
        for (view, query, status, expected) in cases {
            try await check(db, view, query, expected, status: status)
        }
    }
}

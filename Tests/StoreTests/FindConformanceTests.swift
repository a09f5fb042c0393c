import JSON
import XCTest
@testable import Store

/// `_find` with JSON indexes, checked against CouchDB 3.5's rules on one fixed data set.
///
/// Every expected answer was derived by hand from CouchDB's documented behaviour and its
/// Mango sources (`mango_selector`, `mango_idx_view`, `mango_cursor*`), not from this store:
///
/// - An index is usable when the selector requires every one of its fields (any condition
///   but `{"$exists": false}` requires a field; a `$or` requires it in every branch); fields
///   named in `sort` need not be required. A sort must be a prefix of the index's fields,
///   after leading fields fixed by `$eq`. Partial indexes serve only when `use_index` names
///   them. `_all_docs` is the fallback, and always brings the "no matching index" warning.
/// - Among usable JSON indexes the one whose leading fields cover most of the selector's
///   range fields wins, then the one with fewer fields, then by design document and name.
/// - Without `sort` a JSON index answers in its key order (collation, ties by `_id`), and
///   `_all_docs` in `_id` order. `desc` reverses the whole scan, ties included.
/// - Comparisons collate across types: null < false < true < numbers < strings < arrays <
///   objects; strings by ICU (`"a" < "A" < "aa" < "b" < "B"`, accents before case).
/// - Deleted documents, design documents and losing revisions never appear. The default
///   limit is 25.
///
/// Indexes are created partly before and partly after the documents are written, and the
/// deletion and conflicts are written while the first indexes exist, so both building an
/// index and keeping it up to date are exercised.
final class FindConformanceTests: DatabaseTestCase {
    // MARK: - Data set

    /// The documents written as single new revisions. Fields by purpose:
    /// `type` and `year` (indexed alone and together), `name` (collation: case and accents),
    /// `address.city` (nested, indexed) and `address.zip` (nested, mixed types), `tags` and
    /// `scores` (arrays), `meta` (objects), `flag` (booleans and null), `count` (integers,
    /// negatives, a fraction), `v` (one value of every type, indexed), `price`/`instock`
    /// (the partial index). d27 (deleted), d28 and d31 (conflicts) are written in `setUp`.
    static let documents = [
        #"{"_id":"d01","type":"book","year":1999,"name":"alice","address":{"city":"Paris","zip":75001},"tags":["red","blue"],"count":10,"price":12.5,"instock":true}"#,
        #"{"_id":"d02","type":"book","year":2005,"name":"Alice","address":{"city":"Berlin"},"tags":["blue"],"count":7,"price":8,"instock":false}"#,
        #"{"_id":"d03","type":"film","year":1999,"name":"bob","tags":["green","red","blue"],"count":-3,"scores":[80,85]}"#,
        #"{"_id":"d04","type":"film","year":-500,"name":"Bob","tags":[],"count":0,"scores":[70,95]}"#,
        #"{"_id":"d05","type":"music","year":2010.5,"name":"émile","address":{"city":"paris"},"count":3.5,"scores":[82]}"#,
        #"{"_id":"d06","type":"music","year":2020,"name":"Emile","address":{"city":"Zürich","zip":"8001"},"meta":{"primary":1,"secondary":2}}"#,
        #"{"_id":"d07","type":"book","year":2005,"name":"aa","flag":true,"price":20,"instock":true}"#,
        #"{"_id":"d08","type":"book","year":0,"name":"B","flag":false,"price":5,"instock":true}"#,
        #"{"_id":"d09","type":"film","name":"zoë","flag":null,"meta":{"alpha":1}}"#,
        #"{"_id":"d10","type":"music","year":1999.25,"name":"a","tags":["blue","red"],"count":-9}"#,
        #"{"_id":"d11","type":"book","year":2023,"name":"b","address":{"zip":10115},"count":15,"price":0,"instock":true}"#,
        #"{"_id":"d12","type":"film","year":2005,"name":"A","scores":[90,91],"count":21}"#,
        #"{"_id":"d13","year":1850,"name":"emile"}"#,
        #"{"_id":"d14","type":"Book","year":2001,"name":"Émile"}"#,
        #"{"_id":"d15","type":"film","year":2015,"address":{"city":"Berlin","zip":10115},"tags":["red"],"meta":{}}"#,
        #"{"_id":"d16","v":null}"#,
        #"{"_id":"d17","v":false}"#,
        #"{"_id":"d18","v":true}"#,
        #"{"_id":"d19","v":-1}"#,
        #"{"_id":"d20","v":3}"#,
        #"{"_id":"d21","v":"3"}"#,
        #"{"_id":"d22","v":"apple"}"#,
        #"{"_id":"d23","v":"Apple"}"#,
        #"{"_id":"d24","v":[]}"#,
        #"{"_id":"d25","v":[1,"a"]}"#,
        #"{"_id":"d26","v":{"k":1}}"#,
        #"{"_id":"d29","type":"music","year":2015,"name":"Zoe","tags":["blue","green"],"scores":[60],"meta":{"secondary":true},"count":12}"#,
        #"{"_id":"d30","type":"book","year":-12.5,"name":"b","count":-12}"#,
    ]

    /// Indexes created before any document is written.
    static let indexesBefore = [
        #"{"index":{"fields":["year"]},"name":"by-year","ddoc":"ix-year"}"#,
        // fields in sort syntax, as CouchDB accepts them
        #"{"index":{"fields":[{"type":"asc"},{"year":"asc"}]},"name":"by-type-year","ddoc":"ix-type-year"}"#,
        #"{"index":{"fields":["price"],"partial_filter_selector":{"instock":true}},"name":"instock-price","ddoc":"partial"}"#,
    ]

    /// Indexes created after every document, the deletion and the conflicts are written.
    static let indexesAfter = [
        #"{"index":{"fields":["name"]},"name":"by-name","ddoc":"ix-name"}"#,
        #"{"index":{"fields":["address.city"]},"name":"by-city","ddoc":"ix-city"}"#,
        #"{"index":{"fields":["v"]},"name":"by-v","ddoc":"ix-v"}"#,
    ]

    override func setUp() async throws {
        try await super.setUp()
        for definition in Self.indexesBefore { try await database.createIndex(json(definition)) }
        for result in try await database.bulkDocs(Self.documents.map { DocumentUpload(json($0)) }) {
            _ = try result.result.get()
        }
        // d27 matches many queries, then is deleted with its body kept in the tombstone.
        let d27 = try await database.put(json(#"{"_id":"d27","type":"book","year":2005,"name":"alice","v":"zzz","price":1,"instock":true,"tags":["red"]}"#)).revision
        try await database.put(json(#"{"_id":"d27","_rev":"\#(d27)","_deleted":true,"type":"book","year":2005,"name":"alice","v":"zzz","price":1,"instock":true,"tags":["red"]}"#))
        // d28: the losing branch arrives first (and wins until then); 3-ccc then wins by depth over 2-zzz.
        try await database.put(json(#"{"_id":"d28","_rev":"2-zzz","_revisions":{"start":2,"ids":["zzz","aaa"]},"type":"book","year":1990,"name":"dave","v":"cherry","price":2,"instock":true}"#), newEdits: false)
        try await database.put(json(#"{"_id":"d28","_rev":"3-ccc","_revisions":{"start":3,"ids":["ccc","bbb","aaa"]},"type":"film","year":2030,"name":"carol","v":"banana","tags":["red"]}"#), newEdits: false)
        // d31: equal depth, so the higher revision id wins: 2-bbb, written first, stays the winner over 2-aaa.
        try await database.put(json(#"{"_id":"d31","_rev":"2-bbb","_revisions":{"start":2,"ids":["bbb","rrr"]},"type":"music","name":"fay"}"#), newEdits: false)
        try await database.put(json(#"{"_id":"d31","_rev":"2-aaa","_revisions":{"start":2,"ids":["aaa","rrr"]},"type":"book","name":"gus","year":1999}"#), newEdits: false)
        for definition in Self.indexesAfter { try await database.createIndex(json(definition)) }
    }

    // MARK: - Cases

    /// One `_find` body and what CouchDB answers: the `_id`s in order (and, where given,
    /// whether a warning comes with them), or a 400 error with CouchDB's error name.
    struct Case {
        let query: String
        let ids: [String]
        let error: String?
        let warns: Bool?
        let line: UInt

        init(_ query: String, _ ids: [String], warns: Bool? = nil, line: UInt = #line) {
            (self.query, self.ids, self.error, self.warns, self.line) = (query, ids, nil, warns, line)
        }

        init(_ query: String, error: String, line: UInt = #line) {
            (self.query, self.ids, self.error, self.warns, self.line) = (query, [], error, nil, line)
        }
    }

    static let operatorCases: [Case] = [
        // implicit $eq on a field no index covers: _id order, with the no-index warning
        Case(#"{"selector":{"type":"film"}}"#, ids(3, 4, 9, 12, 15, 28), warns: true),
        // $eq is exact and case-sensitive ("Book" is not "book"); the losing "book" revisions of d28 and d31 do not count
        Case(#"{"selector":{"type":{"$eq":"book"}}}"#, ids(1, 2, 7, 8, 11, 30)),
        // $ne needs the field to exist; "Book" differs from "book"
        Case(#"{"selector":{"type":{"$ne":"book"}}}"#, ids(3, 4, 5, 6, 9, 10, 12, 14, 15, 28, 29, 31)),
        // $gt and $lt on one field (implicit $and): negative and fractional numbers, bounds excluded
        Case(#"{"selector":{"count":{"$gt":-5,"$lt":10}}}"#, ids(2, 3, 4, 5)),
        // $gte and $lte include both bounds
        Case(#"{"selector":{"count":{"$gte":10,"$lte":21}}}"#, ids(1, 11, 12, 29)),
        // $in on a scalar field
        Case(#"{"selector":{"type":{"$in":["music","Book"]}}}"#, ids(5, 6, 10, 14, 29, 31)),
        // $in on an array field matches when any element is listed
        Case(#"{"selector":{"tags":{"$in":["green"]}}}"#, ids(3, 29)),
        // $nin on an array field: no element listed; an empty array qualifies, a missing field does not
        Case(#"{"selector":{"tags":{"$nin":["red"]}}}"#, ids(2, 4, 29)),
        // $exists true on an object field
        Case(#"{"selector":{"address":{"$exists":true}}}"#, ids(1, 2, 5, 6, 11, 15)),
        // $exists false: only documents without the field; design documents (the indexes) never appear
        Case(#"{"selector":{"type":{"$exists":false}}}"#, ids(13, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26)),
        // $type on the indexed mixed-type field (full scan of the v index)
        Case(#"{"selector":{"v":{"$type":"array"}}}"#, ids(24, 25)),
        // $type boolean: null is not a boolean
        Case(#"{"selector":{"flag":{"$type":"boolean"}}}"#, ids(7, 8)),
        // equality with null matches an explicit null only, not a missing field
        Case(#"{"selector":{"flag":null}}"#, ids(9)),
        // $size counts array elements
        Case(#"{"selector":{"tags":{"$size":2}}}"#, ids(1, 10, 29)),
        // $mod matches integers only: the count 3.5 of d05 never matches
        Case(#"{"selector":{"count":{"$mod":[5,0]}}}"#, ids(1, 4, 11)),
        // $mod with a negative remainder: the sign follows the dividend (-9 rem 4 = -1)
        Case(#"{"selector":{"count":{"$mod":[4,-1]}}}"#, ids(10)),
        // $regex (PCRE, unanchored unless ^)
        Case(#"{"selector":{"type":{"$regex":"^[Bb]oo"}}}"#, ids(1, 2, 7, 8, 11, 14, 30)),
        // $regex on an indexed field: the name index is still usable (full scan), so the answer comes in name order: "emile" < "Emile"
        Case(#"{"selector":{"name":{"$regex":"^[Ee]"}}}"#, ids(13, 6)),
        // $beginsWith is case-sensitive
        Case(#"{"selector":{"type":{"$beginsWith":"mu"}}}"#, ids(5, 6, 10, 29, 31)),
        // $beginsWith on an indexed field answers in index (name) order, not _id order
        Case(#"{"selector":{"name":{"$beginsWith":"a"}}}"#, ids(10, 7, 1)),
        // $all: every listed element present, in any order
        Case(#"{"selector":{"tags":{"$all":["red","blue"]}}}"#, ids(1, 3, 10)),
        // $elemMatch: one element satisfies both conditions
        Case(#"{"selector":{"scores":{"$elemMatch":{"$gte":80,"$lt":85}}}}"#, ids(3, 5)),
        // $allMatch: every element satisfies the condition
        Case(#"{"selector":{"scores":{"$allMatch":{"$gte":80}}}}"#, ids(3, 5, 12)),
        // $keyMapMatch: some key of the object matches
        Case(#"{"selector":{"meta":{"$keyMapMatch":{"$eq":"secondary"}}}}"#, ids(6, 29)),
        // explicit $and
        Case(#"{"selector":{"$and":[{"type":"book"},{"count":{"$gt":0}}]}}"#, ids(1, 2, 11)),
        // $or across different fields
        Case(#"{"selector":{"$or":[{"type":"Book"},{"count":{"$lt":-5}}]}}"#, ids(10, 14, 30)),
        // $nor becomes $ne on each branch, so the field must exist
        Case(#"{"selector":{"$nor":[{"type":"book"},{"type":"film"}]}}"#, ids(5, 6, 10, 14, 29, 31)),
        // $not is pushed down ($gt becomes $lte): documents without count do not match
        Case(#"{"selector":{"type":"music","$not":{"count":{"$gt":5}}}}"#, ids(5, 10)),
        // $not on a field condition: the field must exist
        Case(#"{"selector":{"tags":{"$not":{"$size":1}}}}"#, ids(1, 3, 4, 10, 29)),
        // nested field by dotted name
        Case(#"{"selector":{"address.zip":10115}}"#, ids(11, 15)),
        // nested field as a nested object; across types a string collates after every number
        Case(#"{"selector":{"address":{"zip":{"$gt":10115}}}}"#, ids(1, 6)),
        // nested object form on an indexed nested field
        Case(#"{"selector":{"address":{"city":"Berlin"}}}"#, ids(2, 15)),
        // across types null < false < true (no index on flag)
        Case(#"{"selector":{"flag":{"$lt":true}}}"#, ids(8, 9)),
        // an empty $or alone selects nothing (CouchDB refuses to run the empty range: maybe_noop_range)
        Case(#"{"selector":{"$or":[]}}"#, []),
        // an empty $and alone selects nothing either (maybe_noop_range)
        Case(#"{"selector":{"$and":[]}}"#, []),
        // an empty $or beside another condition is ignored
        Case(#"{"selector":{"type":"Book","$or":[]}}"#, ids(14)),
        // the empty selector matches every live document, design documents excepted
        Case(#"{"selector":{},"limit":100}"#, ids(1...26) + ids(28...31)),
    ]

    static let sortCases: [Case] = [
        // sort ascending on an indexed field; ties (1999, 2005) by _id
        Case(#"{"selector":{"year":{"$gte":1999,"$lt":2010}},"sort":["year"]}"#, ids(1, 3, 10, 14, 2, 7, 12), warns: false),
        // sort descending reverses the index, ties included
        Case(#"{"selector":{"year":{"$gte":1999,"$lt":2010}},"sort":[{"year":"desc"}]}"#, ids(12, 7, 2, 14, 10, 3, 1)),
        // two sort fields ascending on the [type, year] index ("book" < "Book" < "film" < "music")
        Case(#"{"selector":{"type":{"$gte":"book"},"year":{"$gte":0}},"sort":["type","year"]}"#, ids(8, 1, 2, 7, 11, 14, 3, 12, 15, 28, 10, 5, 29, 6), warns: false),
        // two sort fields descending
        Case(#"{"selector":{"type":{"$gte":"book"},"year":{"$gte":0}},"sort":[{"type":"desc"},{"year":"desc"}]}"#, ids(6, 29, 5, 10, 28, 15, 12, 3, 14, 11, 7, 2, 1, 8)),
        // sort on the second index field when the first is fixed by $eq
        Case(#"{"selector":{"type":"book","year":{"$gt":0}},"sort":["year"]}"#, ids(1, 2, 7, 11), warns: false),
        // the same, descending
        Case(#"{"selector":{"type":"book","year":{"$gt":0}},"sort":[{"year":"desc"}]}"#, ids(11, 7, 2, 1)),
        // string collation: "a" < "A" < "aa" < "alice" < "Alice" < "b"
        Case(#"{"selector":{"name":{"$gt":"a","$lt":"b"}},"sort":["name"]}"#, ids(12, 7, 1, 2)),
        // accents weigh more than case: emile < Emile < émile < Émile < fay < Zoe < zoë; descending
        Case(#"{"selector":{"name":{"$gt":"carol"}},"sort":[{"name":"desc"}]}"#, ids(9, 29, 31, 14, 5, 6, 13)),
        // "b" < "B": a range from "b" to "B"; the two "b" tie and come by _id
        Case(#"{"selector":{"name":{"$gte":"b","$lte":"B"}},"sort":["name"]}"#, ids(11, 30, 8)),
        // type order across one field: false < true < numbers < strings < arrays < objects ($gt null drops null)
        Case(#"{"selector":{"v":{"$gt":null}},"sort":["v"]}"#, ids(17, 18, 19, 20, 21, 22, 23, 28, 24, 25, 26)),
        // $gt a string also matches arrays and objects (they collate after strings); index order, no sort
        Case(#"{"selector":{"v":{"$gt":"Apple"}}}"#, ids(28, 24, 25, 26)),
        // $lt a number matches null and booleans; descending
        Case(#"{"selector":{"v":{"$lt":0}},"sort":[{"v":"desc"}]}"#, ids(19, 18, 17, 16)),
        // no sort but a usable index: index order (by year, then _id), not _id order
        Case(#"{"selector":{"year":{"$gt":2012}}}"#, ids(15, 29, 6, 11, 28)),
        // sort on a nested indexed field, dotted
        Case(#"{"selector":{"address.city":{"$gt":"Berlin"}},"sort":["address.city"]}"#, ids(5, 1, 6)),
    ]

    static let pagingCases: [Case] = [
        // limit
        Case(#"{"selector":{"year":{"$gte":1999,"$lt":2010}},"sort":["year"],"limit":3}"#, ids(1, 3, 10)),
        // skip
        Case(#"{"selector":{"year":{"$gte":1999,"$lt":2010}},"sort":["year"],"skip":5}"#, ids(7, 12)),
        // skip then limit
        Case(#"{"selector":{"year":{"$gte":1999,"$lt":2010}},"sort":["year"],"skip":2,"limit":3}"#, ids(10, 14, 2)),
        // skip past the end
        Case(#"{"selector":{"year":{"$gte":1999,"$lt":2010}},"sort":["year"],"skip":10}"#, []),
        // limit 0
        Case(#"{"selector":{"year":{"$gte":1999}},"limit":0}"#, []),
        // the default limit is 25; design documents are skipped before counting
        Case(#"{"selector":{"_id":{"$gt":null}}}"#, ids(1...25)),
        // limit and skip on the _all_docs scan
        Case(#"{"selector":{"type":{"$exists":false}},"skip":3,"limit":2}"#, ids(18, 19)),
    ]

    static let idCases: [Case] = [
        // _id range without an index: _id order, the deleted d27 skipped; _all_docs always warns
        Case(#"{"selector":{"_id":{"$gt":"d26"}}}"#, ids(28, 29, 30, 31), warns: true),
        // sort by _id descending with an _id range
        Case(#"{"selector":{"_id":{"$gt":"d20","$lte":"d24"}},"sort":[{"_id":"desc"}]}"#, ids(24, 23, 22, 21)),
        // $in on _id: a deleted id and an unknown id match nothing
        Case(#"{"selector":{"_id":{"$in":["d05","d27","d28","nope"]}}}"#, ids(5, 28)),
    ]

    static let useIndexCases: [Case] = [
        // use_index names the partial index: only documents matching its partial_filter_selector (instock), in price order
        Case(#"{"selector":{"price":{"$gte":0}},"use_index":["partial","instock-price"]}"#, ids(11, 8, 1, 7), warns: false),
        // the same selector without use_index: a partial index is never chosen automatically; _all_docs, _id order, warning
        Case(#"{"selector":{"price":{"$gte":0}}}"#, ids(1, 2, 7, 8, 11), warns: true),
        // use_index as "ddoc/name" text, with a descending sort the partial index serves
        Case(#"{"selector":{"price":{"$gt":5}},"sort":[{"price":"desc"}],"use_index":"partial/instock-price"}"#, ids(7, 1)),
        // use_index as a bare design document name
        Case(#"{"selector":{"price":{"$lt":10}},"use_index":"partial"}"#, ids(11, 8)),
        // use_index naming an index that cannot serve the selector falls back, with a warning
        Case(#"{"selector":{"type":"film"},"use_index":["ix-year","by-year"]}"#, ids(3, 4, 9, 12, 15, 28), warns: true),
    ]

    static let revisionCases: [Case] = [
        // a deleted document is never returned (d27 was "alice" too); indexed path
        Case(#"{"selector":{"name":"alice"}}"#, ids(1), warns: false),
        // the deleted document's tombstone body never matches
        Case(#"{"selector":{"v":"zzz"}}"#, []),
        // the deleted document's tombstone body never matches; _all_docs path
        Case(#"{"selector":{"price":1}}"#, []),
        // only the winning revision is indexed: d28's losing "cherry" does not match
        Case(#"{"selector":{"v":{"$in":["cherry","banana"]}}}"#, ids(28)),
        // winning names only (carol beats dave by depth, fay beats gus by revision id); name order
        Case(#"{"selector":{"name":{"$in":["dave","gus","carol","fay"]}}}"#, ids(28, 31)),
        // d31's losing revision (book, 1999) is not in the [type, year] index
        Case(#"{"selector":{"type":"book","year":1999}}"#, ids(1)),
        // d28's losing year is not in the year index
        Case(#"{"selector":{"year":1990}}"#, []),
    ]

    static let errorCases: [Case] = [
        // sort on a field no index has
        Case(#"{"selector":{"count":{"$gt":0}},"sort":["count"]}"#, error: "no_usable_index"),
        // sort fields that are not a prefix of any index (after fields fixed by $eq)
        Case(#"{"selector":{"year":{"$gt":0},"type":{"$gt":"a"}},"sort":["year","type"]}"#, error: "no_usable_index"),
        // sort served only by a partial index that use_index does not name
        Case(#"{"selector":{"price":{"$gt":5}},"sort":["price"]}"#, error: "no_usable_index"),
        // mixed sort directions
        Case(#"{"selector":{"type":"book","year":{"$gt":0}},"sort":[{"type":"asc"},{"year":"desc"}]}"#, error: "unsupported_mixed_sort"),
        // an unknown operator
        Case(#"{"selector":{"year":{"$foo":1}}}"#, error: "invalid_operator"),
        // a selector that is not an object
        Case(#"{"selector":[1]}"#, error: "invalid_selector_json"),
        // no selector
        Case(#"{"limit":1}"#, error: "missing_required_key"),
        // a negative limit
        Case(#"{"selector":{},"limit":-1}"#, error: "invalid_non_neg_integer"),
        // an unknown member
        Case(#"{"selector":{},"foo":1}"#, error: "invalid_key"),
    ]
    func testSelectorOperators() async { await check(Self.operatorCases) }
    func testSortAndIndexOrder() async { await check(Self.sortCases) }
    func testLimitSkipAndDefaultLimit() async { await check(Self.pagingCases) }
    func testIdQueries() async { await check(Self.idCases) }
    func testUseIndexAndPartialIndexes() async { await check(Self.useIndexCases) }
    func testDeletedDocumentsAndLosingRevisions() async { await check(Self.revisionCases) }
    func testErrors() async { await check(Self.errorCases) }

    // MARK: - Projection, paging, revisions

    func testFieldsProjection() async throws {
        // Only the listed fields; "address.city" comes back nested; a missing field (d07 has no
        // address, d11's address has no city) is left out; no _id or _rev unless listed.
        let books = try await find(#"{"selector":{"type":"book","year":{"$gt":2000}},"sort":["year"],"fields":["name","address.city","year"]}"#)
        XCTAssertEqual(books.documents.map(canonical), [
            #"{"name":"Alice","address":{"city":"Berlin"},"year":2005}"#,
            #"{"name":"aa","year":2005}"#,
            #"{"name":"b","year":2023}"#,
        ].map { canonical(json($0)) })

        // _id when listed; a nested field alone; a document with none of the fields but _id.
        let music = try await find(#"{"selector":{"type":"music"},"fields":["_id","meta.secondary","count"]}"#)
        XCTAssertEqual(music.documents.map(canonical), [
            #"{"_id":"d05","count":3.5}"#,
            #"{"_id":"d06","meta":{"secondary":2}}"#,
            #"{"_id":"d10","count":-9}"#,
            #"{"_id":"d29","meta":{"secondary":true},"count":12}"#,
            #"{"_id":"d31"}"#,
        ].map { canonical(json($0)) })

        // Without fields the whole document comes back, with _id and _rev.
        let whole = try await find(#"{"selector":{"name":"aa"}}"#)
        XCTAssertEqual(whole.documents.count, 1)
        guard case .object(var d07)? = whole.documents.first else { return XCTFail("no document") }
        XCTAssertEqual(d07.removeValue(forKey: "_rev")?.stringValue?.hasPrefix("1-"), true)
        XCTAssertEqual(canonical(.object(d07)), canonical(json(Self.documents[6])))
    }

    func testOnlyTheWinningRevisionComesBack() async throws {
        let result = try await find(#"{"selector":{"_id":{"$in":["d28","d31"]}},"fields":["_id","_rev","name"]}"#)
        XCTAssertEqual(result.documents.map(canonical), [
            #"{"_id":"d28","_rev":"3-ccc","name":"carol"}"#,
            #"{"_id":"d31","_rev":"2-bbb","name":"fay"}"#,
        ].map { canonical(json($0)) })
        // conflicts are not listed unless asked for
        let whole = try await find(#"{"selector":{"name":"carol"}}"#)
        XCTAssertEqual(whole.documents.first?["_rev"]?.stringValue, "3-ccc")
        XCTAssertNil(whole.documents.first?["_conflicts"])
    }

    func testBookmarkPagesThroughTheAnswerOnce() async throws {
        // (query with a limit, page sizes until the first empty page, the whole answer)
        let runs: [(String, [Int], [String])] = [
            // year index; the page boundary falls between d07 and d12, which tie at 2005
            (#"{"selector":{"year":{"$gte":0}},"sort":["year"],"limit":4}"#, [4, 4, 4, 3, 0],
             ids(8, 13, 1, 3, 10, 14, 2, 7, 12, 5, 15, 29, 6, 11, 28)),
            // name index, descending
            (#"{"selector":{"name":{"$gt":"b"}},"sort":[{"name":"desc"}],"limit":4}"#, [4, 4, 3, 0],
             ids(9, 29, 31, 14, 5, 6, 13, 28, 4, 3, 8)),
            // _all_docs
            (#"{"selector":{"type":{"$exists":false}},"limit":5}"#, [5, 5, 2, 0],
             ids(13, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26)),
        ]
        for (query, sizes, answer) in runs {
            let got = try await pages(query)
            XCTAssertEqual(got.map(\.count), sizes, query)
            XCTAssertEqual(Array(got.joined()), answer, query)
            guard case .object(var unlimited) = json(query) else { return XCTFail(query) }
            unlimited["limit"] = .number(100)
            let whole = try await database.find(FindQuery(.object(unlimited)))
            XCTAssertEqual(whole.documents.compactMap { $0["_id"]?.stringValue }, answer, query)
        }
    }

    // MARK: - Helpers

    private func find(_ body: String) async throws(StoreError) -> FindResult {
        try await database.find(FindQuery(json(body)))
    }

    private func check(_ cases: [Case]) async {
        for test in cases {
            do {
                let result = try await find(test.query)
                let found = result.documents.map { $0["_id"]?.stringValue ?? "?" }
                if let error = test.error {
                    XCTFail("expected \(error), got \(found): \(test.query)", line: test.line)
                    continue
                }
                XCTAssertEqual(found, test.ids, test.query, line: test.line)
                if let warns = test.warns {
                    XCTAssertEqual(result.warning != nil, warns, "warning \(result.warning ?? "nil"): \(test.query)", line: test.line)
                }
            } catch {
                guard let expected = test.error else {
                    XCTFail("\(error): \(test.query)", line: test.line)
                    continue
                }
                XCTAssertEqual(error.error, expected, "\(error.reason): \(test.query)", line: test.line)
                XCTAssertEqual(error.kind, .badRequest, test.query, line: test.line)
            }
        }
    }

    /// Runs `query` (which has a limit), then again with each returned bookmark, until a page
    /// comes back empty; the `_id`s of each page, the empty one last (at most 20 pages).
    private func pages(_ query: String) async throws(StoreError) -> [[String]] {
        guard case .object(var body) = json(query) else { return [] }
        var pages: [[String]] = []
        while pages.count < 20 {
            let result = try await database.find(FindQuery(.object(body)))
            pages.append(result.documents.map { $0["_id"]?.stringValue ?? "?" })
            if result.documents.isEmpty { break }
            body["bookmark"] = .string(result.bookmark)
        }
        return pages
    }

    /// `value` with every object's members sorted by key: member order is not part of the answer.
    private func canonical(_ value: JSON) -> JSON {
        switch value {
        case .object(let object):
            .object(JSON.Object(object.members.sorted { $0.key < $1.key }.map { (key: $0.key, value: canonical($0.value)) }))
        case .array(let elements):
            .array(elements.map(canonical))
        default:
            value
        }
    }
}

/// `d01`, `d02`…: ids of the data set by number.
private func ids(_ numbers: Int...) -> [String] { numbers.map { $0 < 10 ? "d0\($0)" : "d\($0)" } }
private func ids(_ numbers: ClosedRange<Int>) -> [String] { numbers.map { $0 < 10 ? "d0\($0)" : "d\($0)" } }

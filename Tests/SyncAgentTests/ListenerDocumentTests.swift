import AsyncHTTPClient
import JSON
import Store
import SyncAgent
import XCTest

/// `GET/PUT/DELETE /{db}/{docid}` and `_local` documents, with CouchDB's status codes and errors.
final class ListenerDocumentTests: XCTestCase {
    private func database(_ server: TestListener, _ name: String = "db") async throws -> String {
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/" + name).status, 201)
        return server.url + "/" + name
    }

    func testCreateReadUpdateDelete() async throws {
        let server = try await startListener()
        let db = try await database(server)

        let created = try await HTTP.request(.PUT, db + "/note", json: ["title": "first"])
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(created.json["ok"], true)
        XCTAssertEqual(created.json["id"], "note")
        let rev1 = try XCTUnwrap(created.json["rev"]?.stringValue)
        XCTAssertTrue(rev1.hasPrefix("1-"))
        XCTAssertEqual(created.header("ETag"), "\"\(rev1)\"")
        XCTAssertEqual(created.header("Location"), "/db/note")

        let read = try await HTTP.request(.GET, db + "/note")
        XCTAssertEqual(read.status, 200)
        XCTAssertEqual(read.json["_id"], "note")
        XCTAssertEqual(read.json["_rev"]?.stringValue, rev1)
        XCTAssertEqual(read.json["title"], "first")
        XCTAssertEqual(read.header("ETag"), "\"\(rev1)\"")
        let head = try await HTTP.request(.HEAD, db + "/note")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("ETag"), "\"\(rev1)\"")
        XCTAssertTrue(head.body.isEmpty)
        try await assertEqual(try await HTTP.request(.HEAD, db + "/nothing").status, 404)
        let notModified = try await HTTP.request(.GET, db + "/note", headers: [("If-None-Match", "\"\(rev1)\"")])
        XCTAssertEqual(notModified.status, 304)

        let stale = try await HTTP.json(.PUT, db + "/note", ["title": "no rev"])
        XCTAssertEqual(stale.status, 409)
        XCTAssertEqual(stale.json["error"], "conflict")
        XCTAssertEqual(stale.json["reason"], "Document update conflict.")

        let updated = try await HTTP.json(.PUT, db + "/note", ["_rev": .string(rev1), "title": "second"])
        XCTAssertEqual(updated.status, 201)
        let rev2 = try XCTUnwrap(updated.json["rev"]?.stringValue)
        XCTAssertTrue(rev2.hasPrefix("2-"))
        let withRevs = try await HTTP.json(.GET, db + "/note?revs=true&revs_info=true")
        XCTAssertEqual(withRevs.json["_revisions"]?["start"], 2)
        XCTAssertEqual(withRevs.json["_revisions"]?["ids"]?.arrayValue?.count, 2)
        XCTAssertEqual(withRevs.json["_revs_info"]?.arrayValue?.first?["status"], "available")
        let old = try await HTTP.json(.GET, db + "/note?rev=" + rev1)
        XCTAssertEqual(old.json["title"], "first")

        let viaQuery = try await HTTP.json(.PUT, db + "/note?rev=" + rev2, ["title": "third"])
        XCTAssertEqual(viaQuery.status, 201)
        let rev3 = try XCTUnwrap(viaQuery.json["rev"]?.stringValue)

        try await assertEqual(try await HTTP.json(.DELETE, db + "/note").status, 409)
        let deleted = try await HTTP.json(.DELETE, db + "/note?rev=" + rev3)
        XCTAssertEqual(deleted.status, 200)
        XCTAssertEqual(deleted.json["ok"], true)
        let gone = try await HTTP.json(.GET, db + "/note")
        XCTAssertEqual(gone.status, 404)
        XCTAssertEqual(gone.json["error"], "not_found")
        XCTAssertEqual(gone.json["reason"], "deleted")
        let tombstone = try await HTTP.json(.GET, db + "/note?rev=" + (deleted.json["rev"]?.stringValue ?? ""))
        XCTAssertEqual(tombstone.json["_deleted"], true)
        try await assertEqual(try await HTTP.json(.GET, db + "/never").json["reason"], "missing")
    }

    func testPostCreatesADocumentWithANewIDAndBatchAnswers202() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let posted = try await HTTP.request(.POST, db, json: ["kind": "generated"])
        XCTAssertEqual(posted.status, 201)
        let id = try XCTUnwrap(posted.json["id"]?.stringValue)
        XCTAssertEqual(id.count, 32)
        try await assertEqual(try await HTTP.json(.GET, db + "/" + id).json["kind"], "generated")
        let batch = try await HTTP.json(.PUT, db + "/later?batch=ok", ["x": 1])
        XCTAssertEqual(batch.status, 202)
        XCTAssertEqual(batch.json["ok"], true)
    }

    func testDesignDocumentIDsInEitherForm() async throws {
        let server = try await startListener()
        let db = try await database(server)
        try await assertEqual(try await HTTP.json(.PUT, db + "/_design/app", ["language": "query"]).status, 201)
        let encoded = try await HTTP.json(.GET, db + "/_design%2Fapp")
        XCTAssertEqual(encoded.status, 200)
        XCTAssertEqual(encoded.json["_id"], "_design/app")
        let slash = try await HTTP.json(.PUT, db + "/a%2Fb", ["x": 1])
        XCTAssertEqual(slash.status, 201)
        try await assertEqual(try await HTTP.json(.GET, db + "/a%2Fb").json["_id"], "a/b")
    }

    func testBadInputGetsCouchDBErrorsAndChangesNothing() async throws {
        let server = try await startListener { $0.maximumRequestSize = 100_000 }
        let db = try await database(server)
        let invalidJSON = try await HTTP.request(.PUT, db + "/x", body: Array("{\"a\": ".utf8), headers: [("Content-Type", "application/json")])
        XCTAssertEqual(invalidJSON.status, 400)
        XCTAssertEqual(invalidJSON.json["error"], "bad_request")
        let notObject = try await HTTP.json(.PUT, db + "/x", [1, 2])
        XCTAssertEqual(notObject.status, 400)
        let badID = try await HTTP.json(.PUT, db + "/_bad", ["a": 1])
        XCTAssertEqual(badID.status, 400)
        XCTAssertEqual(badID.json["error"], "illegal_docid")
        let badSpecial = try await HTTP.json(.PUT, db + "/x", ["_unknown": 1])
        XCTAssertEqual(badSpecial.status, 400)
        XCTAssertEqual(badSpecial.json["error"], "doc_validation")
        let badRev = try await HTTP.json(.GET, db + "/x?rev=nonsense")
        XCTAssertEqual(badRev.status, 400)
        let badBool = try await HTTP.json(.GET, db + "/x?revs=maybe")
        XCTAssertEqual(badBool.status, 400)
        let huge = JSON.object(["blob": .string(String(repeating: "x", count: 200_000))])
        let tooLarge = try await HTTP.json(.PUT, db + "/x", huge)
        XCTAssertEqual(tooLarge.status, 413)
        XCTAssertEqual(tooLarge.json["error"], "too_large")
        let wrongType = try await HTTP.request(.POST, db + "/_bulk_docs", body: Array("{}".utf8), headers: [("Content-Type", "text/plain")])
        XCTAssertEqual(wrongType.status, 415)
        XCTAssertEqual(wrongType.json["error"], "bad_content_type")
        let info = try await HTTP.json(.GET, db)
        XCTAssertEqual(info.json["doc_count"], 0)
        XCTAssertEqual(info.json["update_seq"], 0)
        // The server still answers after all that.
        try await assertEqual(try await HTTP.json(.PUT, db + "/x", ["a": 1]).status, 201)
    }

    func testDocumentLargerThanTheStoreAllowsIs413() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let huge = JSON.object(["blob": .string(String(repeating: "y", count: 9_000_000))])
        let answer = try await HTTP.json(.PUT, db + "/big", huge)
        XCTAssertEqual(answer.status, 413)
        XCTAssertEqual(answer.json["error"], "document_too_large")
    }

    func testNewEditsFalseAndOpenRevisions() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let left: JSON = ["_id": "doc", "_rev": "2-aaa", "_revisions": ["start": 2, "ids": ["aaa", "root"]], "side": "left"]
        let right: JSON = ["_id": "doc", "_rev": "2-bbb", "_revisions": ["start": 2, "ids": ["bbb", "root"]], "side": "right"]
        try await assertEqual(try await HTTP.json(.PUT, db + "/doc?new_edits=false", left).status, 201)
        try await assertEqual(try await HTTP.json(.PUT, db + "/doc?new_edits=false", right).status, 201)

        let winner = try await HTTP.json(.GET, db + "/doc?conflicts=true")
        XCTAssertEqual(winner.json["_rev"], "2-bbb")
        XCTAssertEqual(winner.json["_conflicts"], ["2-aaa"])

        let all = try await HTTP.json(.GET, db + "/doc?open_revs=all&revs=true")
        XCTAssertEqual(all.status, 200)
        let revs = Set(all.json.arrayValue?.compactMap { $0["ok"]?["_rev"]?.stringValue } ?? [])
        XCTAssertEqual(revs, ["2-aaa", "2-bbb"])
        XCTAssertEqual(all.json.arrayValue?.first?["ok"]?["_revisions"]?["ids"]?.arrayValue?.count, 2)

        let listed = try await HTTP.json(.GET, db + "/doc?open_revs=" + "[\"2-aaa\",\"9-zzz\"]".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        XCTAssertEqual(listed.json.arrayValue?.count, 2)
        XCTAssertEqual(listed.json.arrayValue?.first?["ok"]?["side"], "left")
        XCTAssertEqual(listed.json.arrayValue?.last?["missing"], "9-zzz")

        let latest = try await HTTP.json(.GET, db + "/doc?latest=true&open_revs=" + "[\"1-root\"]".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        XCTAssertEqual(Set(latest.json.arrayValue?.compactMap { $0["ok"]?["_rev"]?.stringValue } ?? []), ["2-aaa", "2-bbb"])

        let missingDoc = try await HTTP.json(.GET, db + "/nothing?open_revs=all")
        XCTAssertEqual(missingDoc.status, 404)
    }

    func testLocalDocuments() async throws {
        let server = try await startListener()
        let db = try await database(server)
        let first = try await HTTP.json(.PUT, db + "/_local/checkpoint", ["last_seq": 5])
        XCTAssertEqual(first.status, 201)
        XCTAssertEqual(first.json["rev"], "0-1")
        let read = try await HTTP.json(.GET, db + "/_local/checkpoint")
        XCTAssertEqual(read.json["_id"], "_local/checkpoint")
        XCTAssertEqual(read.json["_rev"], "0-1")
        XCTAssertEqual(read.json["last_seq"], 5)
        try await assertEqual(try await HTTP.json(.PUT, db + "/_local/checkpoint", ["last_seq": 6]).status, 409)
        let second = try await HTTP.json(.PUT, db + "/_local/checkpoint", ["_rev": "0-1", "last_seq": 6])
        XCTAssertEqual(second.json["rev"], "0-2")
        let encoded = try await HTTP.json(.GET, db + "/_local%2Fcheckpoint")
        XCTAssertEqual(encoded.json["last_seq"], 6)
        // Local documents are not in the changes feed or the document count.
        try await assertEqual(try await HTTP.json(.GET, db + "/_changes").json["results"]?.arrayValue?.count, 0)
        try await assertEqual(try await HTTP.json(.DELETE, db + "/_local/checkpoint?rev=0-2").status, 200)
        try await assertEqual(try await HTTP.json(.GET, db + "/_local/checkpoint").status, 404)
        try await assertEqual(try await HTTP.json(.POST, db + "/_ensure_full_commit").status, 201)
    }
}

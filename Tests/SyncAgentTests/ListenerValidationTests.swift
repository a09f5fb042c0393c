import Foundation
import JSON
import Store
import SyncAgent
import XCTest

/// Design documents' `validate_doc_update`, run on every write as CouchDB runs it: through the
/// listener (PUT, POST, DELETE, `_bulk_docs` with and without `new_edits`) and by replication.
final class ListenerValidationTests: XCTestCase {
    private static let rules = """
        function (newDoc, oldDoc, userCtx, secObj) {
          if (newDoc._deleted) {
            if (oldDoc && oldDoc.kept) throw({forbidden: 'Kept documents stay.'});
            return;
          }
          if (!newDoc.type) throw({forbidden: 'Documents need a type.'});
          if (newDoc.type === 'secret' && userCtx.roles.indexOf('_admin') < 0) throw({unauthorized: 'Only admins write secrets.'});
          if (oldDoc && oldDoc.locked) throw({forbidden: 'Locked since revision ' + oldDoc._rev + '.'});
          if (newDoc.author !== undefined && newDoc.author !== userCtx.name) throw({forbidden: 'You are ' + userCtx.name + '.'});
          if (newDoc.type === 'member' && (secObj.members || {}).names.indexOf(userCtx.name) < 0) throw({forbidden: 'Members only.'});
        }
        """

    /// A database on `server` with the rules' design document, written by the admin.
    private func rulesDatabase(_ server: TestListener, name: String = "db") async throws -> String {
        let db = server.url + "/" + name
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        let design = try await HTTP.json(.PUT, db + "/_design/rules", ["validate_doc_update": .string(Self.rules)])
        XCTAssertEqual(design.status, 201, "an admin's design document is not judged by the functions: \(design.json)")
        return db
    }

    func testRefusedWritesGetCouchDBsStatusAndBodyAndAreNotStored() async throws {
        let server = try await startListener()
        let db = try await rulesDatabase(server)

        let untyped = try await HTTP.json(.PUT, db + "/a", ["n": 1])
        XCTAssertEqual(untyped.status, 403)
        XCTAssertEqual(untyped.json, ["error": "forbidden", "reason": "Documents need a type."])
        try await assertEqual(try await HTTP.json(.GET, db + "/a").status, 404)

        let posted = try await HTTP.json(.POST, db, ["n": 1])
        XCTAssertEqual(posted.status, 403, "a document given its id by the server is judged too")

        let written = try await HTTP.json(.PUT, db + "/a", ["type": "note", "kept": true])
        XCTAssertEqual(written.status, 201)
        let revision = try XCTUnwrap(written.json["rev"]?.stringValue)

        let secret = try await HTTP.json(.PUT, server.anonymousURL + "/db/s", ["type": "secret"],
                                         headers: [HTTP.basic(TestListener.adminName, TestListener.adminPassword)])
        XCTAssertEqual(secret.status, 201, "the admin's userCtx carries _admin: \(secret.json)")

        let deleted = try await HTTP.json(.DELETE, db + "/a?rev=" + revision)
        XCTAssertEqual(deleted.status, 403)
        XCTAssertEqual(deleted.json, ["error": "forbidden", "reason": "Kept documents stay."], "oldDoc is the revision deleted")
        try await assertEqual(try await HTTP.json(.GET, db + "/a").json["_rev"], .string(revision))
    }

    func testOldDocIsTheRevisionTheWriteReplaces() async throws {
        let server = try await startListener()
        let db = try await rulesDatabase(server)
        let first = try await HTTP.json(.PUT, db + "/doc", ["type": "note", "locked": true])
        let revision = try XCTUnwrap(first.json["rev"]?.stringValue)
        let edit = try await HTTP.json(.PUT, db + "/doc", ["_rev": .string(revision), "type": "note"])
        XCTAssertEqual(edit.status, 403)
        XCTAssertEqual(edit.json["reason"], .string("Locked since revision \(revision)."))
        // A replicated revision on a new branch has no locked ancestor kept: it is judged with oldDoc null.
        let branch = try await HTTP.json(.PUT, db + "/doc?new_edits=false", ["_rev": "1-other", "type": "note"])
        XCTAssertEqual(branch.status, 201, "\(branch.json)")
        // One that extends the locked leaf is judged against it.
        let extended = try await HTTP.json(.PUT, db + "/doc?new_edits=false", [
            "_rev": "2-next", "_revisions": ["start": 2, "ids": ["next", .string(String(revision.dropFirst(2)))]], "type": "note",
        ])
        XCTAssertEqual(extended.status, 403, "\(extended.json)")
    }

    func testBulkDocsAnswersEachRefusalAndWritesTheRest() async throws {
        let server = try await startListener()
        let db = try await rulesDatabase(server)
        let answer = try await HTTP.json(.POST, db + "/_bulk_docs", ["docs": [
            ["_id": "b", "type": "note"], ["_id": "c"], ["_id": "_local/free"], ["type": "note"],
        ]])
        XCTAssertEqual(answer.status, 201)
        let rows = try XCTUnwrap(answer.json.arrayValue)
        XCTAssertEqual(rows.count, 4)
        XCTAssertEqual(rows[0]["ok"], true)
        XCTAssertEqual(rows[1], ["id": "c", "error": "forbidden", "reason": "Documents need a type."])
        XCTAssertEqual(rows[2]["ok"], true, "_local documents are not judged")
        XCTAssertEqual(rows[3]["ok"], true)

        let replicated = try await HTTP.json(.POST, db + "/_bulk_docs", ["new_edits": false, "docs": [
            ["_id": "d", "_rev": "1-abc"], ["_id": "e", "_rev": "1-abc", "type": "note"],
        ]])
        XCTAssertEqual(replicated.status, 201)
        XCTAssertEqual(replicated.json, [["id": "d", "rev": "1-abc", "error": "forbidden", "reason": "Documents need a type."]])
        try await assertEqual(try await HTTP.json(.GET, db + "/d").status, 404)
        try await assertEqual(try await HTTP.json(.GET, db + "/e").status, 200)
        // A revision already stored is not judged again (nothing is written).
        let again = try await HTTP.json(.POST, db + "/_bulk_docs", ["new_edits": false, "docs": [["_id": "e", "_rev": "1-abc"]]])
        XCTAssertEqual(again.json, [])
    }

    func testTheFunctionSeesTheWritersUserContextAndTheSecurityObject() async throws {
        let server = try await startListener(users: ["bob": "bob-password", "eve": "eve-password"])
        let db = try await rulesDatabase(server)
        try await assertEqual(try await HTTP.json(.PUT, db + "/_security", ["members": ["names": ["bob"]]]).status, 200)
        let bob = [HTTP.basic("bob", "bob-password")]
        let asBob = server.anonymousURL + "/db"
        try await assertEqual(try await HTTP.json(.PUT, asBob + "/by-bob", ["type": "note", "author": "bob"], headers: bob).status, 201)
        let forged = try await HTTP.json(.PUT, asBob + "/forged", ["type": "note", "author": "eve"], headers: bob)
        XCTAssertEqual(forged.status, 403)
        XCTAssertEqual(forged.json["reason"], "You are bob.")
        let secret = try await HTTP.json(.PUT, asBob + "/secret", ["type": "secret"], headers: bob)
        XCTAssertEqual(secret.status, 401)
        XCTAssertEqual(secret.json, ["error": "unauthorized", "reason": "Only admins write secrets."])
        try await assertEqual(try await HTTP.json(.PUT, asBob + "/m", ["type": "member"], headers: bob).status, 201)
        let admin = try await HTTP.json(.PUT, db + "/m2", ["type": "member"])
        XCTAssertEqual(admin.json["reason"], "Members only.", "the security object reaches the function: \(admin.json)")
    }

    func testAReplicationCountsRefusalsAsWriteFailuresAndWritesTheRest() async throws {
        try await withTwoListeners { a, b in
            let source = try a.catalog.create("db")
            for index in 0..<6 {
                try await source.put(["_id": .string("typed\(index)"), "type": "note"])
            }
            try await source.put(["_id": "untyped1"])
            try await source.put(["_id": "untyped2"])
            // Pushed to a listener: its _bulk_docs refuses two.
            _ = try await rulesDatabase(b)
            let pushed = await Replicator(ReplicationConfiguration(source: LocalEndpoint(source), target: try RemoteEndpoint(url: b.url + "/db"))).run()
            XCTAssertNil(pushed.lastError)
            XCTAssertEqual(pushed.docsWritten, 6)
            XCTAssertEqual(pushed.docWriteFailures, 2)
            try await assertEqual(try await HTTP.json(.GET, b.url + "/db/untyped1").status, 404)
            // Pulled into a database of this node from a remote: the store judges what the replicator writes.
            let target = try a.catalog.create("copy")
            try await target.put(["_id": "_design/rules", "validate_doc_update": .string(Self.rules)])
            let pulled = await Replicator(ReplicationConfiguration(source: try RemoteEndpoint(url: a.url + "/db"), target: LocalEndpoint(target))).run()
            XCTAssertNil(pulled.lastError)
            XCTAssertEqual(pulled.docsWritten, 6)
            XCTAssertEqual(pulled.docWriteFailures, 2)
            XCTAssertThrowsError(try target.document(id: "untyped2")) { error in
                XCTAssertEqual((error as? StoreError)?.kind, .notFound)
            }
            XCTAssertEqual(try target.document(id: "typed5").body["type"], "note")
        }
    }

    func testARunawayFunctionFailsItsWriteWithCouchDBsErrorWhileOtherDatabasesAreAnswered() async throws {
        let server = try await startListener()
        let db = server.url + "/spin"
        try await assertEqual(try await HTTP.json(.PUT, db).status, 201)
        try await assertEqual(try await HTTP.json(.PUT, db + "/_design/spin", ["validate_doc_update": "function () { while (true) {} }"]).status, 201)
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/calm").status, 201)
        let start = Date()
        let spinning = Flag()
        let spun = Task {
            defer { spinning.set(false) }
            return try await HTTP.json(.PUT, db + "/doc", ["n": 1])
        }
        try await Task.sleep(for: .milliseconds(300))
        let calm = try await HTTP.json(.PUT, server.url + "/calm/doc", ["n": 1])
        XCTAssertEqual(calm.status, 201)
        XCTAssertNil(spinning.value, "another database's write was answered while the runaway still ran")
        let answer = try await spun.value
        XCTAssertEqual(answer.status, 500)
        XCTAssertEqual(answer.json, ["error": "os_process_error", "reason": "OS process timed out."])
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 5, "stopped at CouchDB's os_process_timeout, not before")
        try await assertEqual(try await HTTP.json(.GET, db + "/doc").status, 404)
    }
}

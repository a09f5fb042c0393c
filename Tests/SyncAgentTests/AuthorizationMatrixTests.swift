import AsyncHTTPClient
import Foundation
import JSON
import NIOHTTP1
import Store
@testable import SyncAgent
import XCTest

/// Who may do what on the listener: anonymous, a user (member of one
/// database), a server admin, a paired peer, and an unpaired node, against
/// every route family, each with the status CouchDB's model gives.
final class AuthorizationMatrixTests: XCTestCase {
    enum Who: String, CaseIterable {
        case anonymous, user, admin, peer, stranger
    }

    func testEveryRouteFamilyForEveryKindOfClient() async throws {
        let a = try await startListener(users: ["member": "member-pw"]) { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        let stranger = try await startListener { $0.tls = true }
        _ = try await b.join(try a.invite(["shared"]))
        try await a.catalog.database("shared").setSecurity(["members": ["names": ["member"]]])
        _ = try a.catalog.create("private")
        try await a.catalog.create("open").setSecurity(["members": ["names": [], "roles": []]])
        let rev = try await a.catalog.database("shared").put(["_id": "doc", "v": 1]).result.get().description

        let plain = try PeerClient(to: a)
        let asPeer = try PeerClient(to: a, as: b.listener.node.identity)
        let asStranger = try PeerClient(to: a, as: stranger.listener.node.identity)
        func send(_ who: Who, _ method: HTTPMethod, _ path: String, _ body: JSON? = nil) async throws -> Int {
            var headers: [(String, String)] = []
            switch who {
            case .user: headers.append(HTTP.basic("member", "member-pw"))
            case .admin: headers.append(HTTP.basic(TestListener.adminName, TestListener.adminPassword))
            default: break
            }
            let client = who == .peer ? asPeer.client : who == .stranger ? asStranger.client : plain.client
            return try await HTTP.request(method, a.anonymousURL + path, json: body, headers: headers, client: client).status
        }

        let replicated: JSON = ["new_edits": false, "docs": [["_id": "r", "_rev": "1-aaaa", "_revisions": ["start": 1, "ids": ["aaaa"]]]]]
        // Expected status for anonymous, user, admin, peer, stranger.
        let rows: [(HTTPMethod, String, JSON?, [Int])] = [
            (.GET, "/", nil, [200, 200, 200, 200, 200]),
            (.GET, "/_up", nil, [200, 200, 200, 200, 200]),
            (.GET, "/_session", nil, [200, 200, 200, 200, 200]),
            (.GET, "/_all_dbs", nil, [401, 403, 200, 403, 403]),
            // The group's introductions: for its members only.
            (.GET, "/_introductions", nil, [401, 403, 403, 200, 403]),
            (.GET, "/_uuids", nil, [401, 200, 200, 200, 403]),
            (.PUT, "/created", nil, [401, 403, 201, 403, 403]),
            (.GET, "/shared", nil, [401, 200, 200, 200, 403]),
            (.GET, "/private", nil, [401, 403, 200, 403, 403]),
            (.GET, "/open", nil, [200, 200, 200, 403, 200]),
            (.PUT, "/open/new-{who}", ["v": 1], [401, 201, 201, 403, 403]),
            (.GET, "/shared/doc", nil, [401, 200, 200, 200, 403]),
            (.GET, "/shared/doc?open_revs=all", nil, [401, 200, 200, 200, 403]),
            (.PUT, "/shared/edit-{who}", ["v": 1], [401, 201, 201, 403, 403]),
            // The member deletes the revision; the admin, allowed too, then finds it gone (409).
            (.DELETE, "/shared/doc?rev=" + rev, nil, [401, 200, 409, 403, 403]),
            (.PUT, "/shared/_design/x-{who}", ["views": [:]], [401, 403, 201, 403, 403]),
            (.GET, "/shared/_changes", nil, [401, 200, 200, 200, 403]),
            (.GET, "/shared/_all_docs", nil, [401, 200, 200, 200, 403]),
            (.POST, "/shared/_revs_diff", ["doc": ["1-x"]], [401, 200, 200, 200, 403]),
            (.POST, "/shared/_bulk_get", ["docs": [["id": "doc"]]], [401, 200, 200, 200, 403]),
            (.POST, "/shared/_bulk_docs", replicated, [401, 201, 201, 201, 403]),
            (.POST, "/shared/_bulk_docs", ["docs": [["_id": "new"]]], [401, 201, 201, 403, 403]),
            (.POST, "/shared/_ensure_full_commit", [:], [401, 201, 201, 201, 403]),
            (.POST, "/shared/_bulk_docs", ["new_edits": false, "docs": [["_id": "_local/other", "_rev": "0-1"]]], [401, 201, 201, 403, 403]),
            (.POST, "/shared/_bulk_docs", ["docs": [["_id": "_design/y-{who}"]]], [401, 403, 201, 403, 403]),
            (.POST, "/shared", ["_id": "_design/z-{who}"], [401, 403, 201, 403, 403]),
            (.POST, "/shared/_index", [:], [401, 403, 400, 403, 403]),
            // Queries are for users; peers only replicate. Indexes are design documents: the database's admins.
            (.POST, "/shared/_find", ["selector": [:]], [401, 200, 200, 403, 403]),
            (.POST, "/shared/_explain", ["selector": [:]], [401, 200, 200, 403, 403]),
            (.GET, "/shared/_index", nil, [401, 200, 200, 403, 403]),
            (.POST, "/shared/_index", ["index": ["fields": ["v"]], "ddoc": "ix", "name": "v"], [401, 403, 200, 403, 403]),
            (.DELETE, "/shared/_index/ix/json/v", nil, [401, 403, 200, 403, 403]),
            (.GET, "/shared/_security", nil, [401, 200, 200, 200, 403]),
            (.PUT, "/shared/_security", ["members": ["names": "member"]], [401, 403, 400, 403, 403]),
            (.PUT, "/shared/_security", ["members": ["names": ["member"]]], [401, 403, 200, 403, 403]),
            (.POST, "/shared/_compact", [:], [401, 403, 202, 403, 403]),
            (.PUT, "/shared/_revs_limit", 100, [401, 403, 200, 403, 403]),
            (.GET, "/private/_changes", nil, [401, 403, 200, 403, 403]),
            (.DELETE, "/created", nil, [401, 403, 200, 403, 403]),
        ]
        var mismatches: [String] = []
        for (method, path, body, expected) in rows {
            for (index, who) in Who.allCases.enumerated() {
                let status = try await send(who, method, path.replacingOccurrences(of: "{who}", with: who.rawValue), body)
                if status != expected[index] { mismatches.append("\(method) \(path) as \(who): \(status), expected \(expected[index])") }
            }
        }
        XCTAssertEqual(mismatches, [])
        // A database without a security object answers CouchDB 3's admin-only one.
        let defaultSecurity = try await HTTP.json(.GET, a.anonymousURL + "/private/_security",
                                                  headers: [HTTP.basic(TestListener.adminName, TestListener.adminPassword)], client: plain.client)
        XCTAssertEqual(defaultSecurity.json, ["admins": ["roles": ["_admin"]], "members": ["roles": ["_admin"]]])
        await plain.shutdown()
        await asPeer.shutdown()
        await asStranger.shutdown()
    }

    /// A peer reads and writes only the local documents it wrote itself.
    func testPeersReachOnlyTheirOwnLocalDocuments() async throws {
        let a = try await startListener { $0.tls = true }
        let b = try await startListener { $0.tls = true }
        let c = try await startListener { $0.tls = true }
        _ = try await b.join(try a.invite(["shared"]))
        _ = try await c.join(try a.invite(["shared"]))
        let asB = try PeerClient(to: a, as: b.listener.node.identity)
        let asC = try PeerClient(to: a, as: c.listener.node.identity)
        let put = try await HTTP.json(.PUT, a.anonymousURL + "/shared/_local/checkpoint", ["seq": 5], client: asB.client)
        let readByB = try await HTTP.json(.GET, a.anonymousURL + "/shared/_local/checkpoint", client: asB.client)
        let readByC = try await HTTP.json(.GET, a.anonymousURL + "/shared/_local/checkpoint", client: asC.client)
        let overwriteByC = try await HTTP.json(.PUT, a.anonymousURL + "/shared/_local/checkpoint", ["seq": 9], client: asC.client)
        await asB.shutdown()
        await asC.shutdown()
        XCTAssertEqual(put.status, 201)
        XCTAssertEqual(readByB.json["seq"], 5)
        XCTAssertEqual(readByC.status, 404)
        XCTAssertEqual(overwriteByC.status, 404)
        XCTAssertEqual(try a.catalog.database("shared").localDocument(id: "_local/checkpoint").json["seq"], 5)
    }

    /// A peer's local documents are few and small (its checkpoints); anyone's are held to
    /// `max_document_size`. Beyond, 413 with CouchDB's body, and nothing written.
    func testLocalDocumentsAreBoundedInSizeAndAPeersInNumber() async throws {
        let a = try await startListener { $0.tls = true; $0.maximumRequestSize = 4 << 20 }
        let b = try await startListener { $0.tls = true }
        _ = try await b.join(try a.invite(["shared"]))
        let asB = try PeerClient(to: a, as: b.listener.node.identity)
        addTeardownBlock { await asB.shutdown() }
        let url = a.anonymousURL + "/shared/_local/"

        let big = try await HTTP.json(.PUT, url + "big", ["pad": .string(String(repeating: "x", count: 70_000))], client: asB.client)
        XCTAssertEqual(big.status, 413, "\(big.json)")
        XCTAssertEqual(big.json["error"], "document_too_large")
        for index in 0..<100 {
            let put = try await HTTP.json(.PUT, url + "c\(index)", ["seq": .number(Double(index))], client: asB.client)
            XCTAssertEqual(put.status, 201, "\(put.json)")
        }
        let more = try await HTTP.json(.PUT, url + "c100", ["seq": 1], client: asB.client)
        XCTAssertEqual(more.status, 413, "\(more.json)")
        XCTAssertNotNil(more.json["reason"]?.stringValue)
        // Its own, replaced, are not more of them; a user's do not count against it.
        try await assertEqual(try await HTTP.json(.PUT, url + "c0", ["seq": 7, "_rev": "0-1"], client: asB.client).status, 201)
        try await a.catalog.database("shared").putLocal(id: "_local/mine", .object(["pad": .string(String(repeating: "x", count: 70_000))]))
        try await assertEqual(try await HTTP.json(.PUT, url + "c100", ["seq": 1], client: asB.client).status, 413)

        // Anyone's local document is held to max_document_size (8 MB by default, as CouchDB's).
        let database = try a.catalog.database("shared")
        let huge = JSON.object(["pad": .string(String(repeating: "x", count: database.maximumDocumentSize + 1))])
        do {
            try await database.putLocal(id: "_local/huge", huge)
            XCTFail("a local document over max_document_size is refused")
        } catch {
            XCTAssertEqual(error.error, "document_too_large")
        }
        XCTAssertThrowsError(try database.localDocument(id: "_local/huge")) { XCTAssertEqual(($0 as? StoreError)?.error, "not_found") }
        XCTAssertThrowsError(try database.localDocument(id: "_local/c100")) { XCTAssertEqual(($0 as? StoreError)?.error, "not_found") }
        XCTAssertThrowsError(try database.localDocument(id: "_local/big")) { XCTAssertEqual(($0 as? StoreError)?.error, "not_found") }
    }
}

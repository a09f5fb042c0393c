import Foundation
import JSON
import Store
import SyncAgent
import Testing

/// Replications filtered by a design document's filter function (CouchDB's `filter=DESIGN/NAME`
/// with `query_params`): run on the source, a remote listener or this node's store, and part
/// of the replication's id, so a changed function starts from the beginning.
@Suite struct ReplicationFilterFunctionTests {
    static func design(passing field: String) -> JSON {
        ["filters": ["by": .string("function (doc, req) { return doc.\(field) === req.query.value; }")]]
    }

    /// Six documents, three of each type, and two colours across them.
    static func fill(_ database: Database) async throws {
        for index in 0..<6 {
            try await database.put(["_id": .string("d\(index)"), "type": index % 2 == 0 ? "a" : "b", "colour": index < 3 ? "red" : "blue"])
        }
    }

    @Test func aPullRunsTheFilterOnTheRemoteSourceAndAPushOnThisNode() async throws {
        try await withTwoListeners { a, b in
            // Pull: the remote (b) runs the function.
            let remote = try b.catalog.create("db")
            try await Self.fill(remote)
            try await remote.put(["_id": "_design/app"] + Self.design(passing: "type"))
            let local = try a.catalog.create("pulled")
            var pull = ReplicationConfiguration(source: try RemoteEndpoint(url: b.url + "/db"), target: LocalEndpoint(local))
            pull.filter = .function(name: "app/by", queryParameters: ["value": "a"])
            let pulled = await Replicator(pull).run()
            #expect(pulled.lastError == nil)
            #expect(pulled.docsWritten == 3)
            #expect(try local.allDocs(AllDocsOptions()).rows.map(\.id) == ["d0", "d2", "d4"])

            // Push: this node's store runs it on its own feed.
            let source = try a.catalog.create("source")
            try await Self.fill(source)
            try await source.put(["_id": "_design/app"] + Self.design(passing: "colour"))
            _ = try b.catalog.create("pushed")
            var push = ReplicationConfiguration(source: LocalEndpoint(source), target: try RemoteEndpoint(url: b.url + "/pushed"))
            push.filter = .function(name: "app/by", queryParameters: ["value": "blue"])
            let pushed = await Replicator(push).run()
            #expect(pushed.lastError == nil)
            #expect(try b.catalog.database("pushed").allDocs(AllDocsOptions()).rows.map(\.id) == ["d3", "d4", "d5"])
        }
    }

    @Test func aChangedFunctionStartsANewCheckpoint() async throws {
        try await withTwoListeners { a, b in
            let remote = try b.catalog.create("db")
            try await Self.fill(remote)
            let first = try await remote.put(["_id": "_design/app"] + Self.design(passing: "type"))
            let local = try a.catalog.create("copy")
            var pull = ReplicationConfiguration(source: try RemoteEndpoint(url: b.url + "/db"), target: LocalEndpoint(local))
            pull.filter = .function(name: "app/by", queryParameters: ["value": "a"])
            #expect(await Replicator(pull).run().docsWritten == 3)
            // The same function again checks nothing: it resumes from its checkpoint.
            let again = await Replicator(pull).run()
            #expect(again.lastError == nil)
            #expect(again.revisionsChecked == 0)
            // The same filter in other words: a new id, and the feed is read from the start.
            let revision = try first.result.get()
            try await remote.put(["_id": "_design/app", "_rev": .string(revision.description),
                                  "filters": ["by": "function (doc, req) { return req.query.value === doc.type; }"]])
            let changed = await Replicator(pull).run()
            #expect(changed.lastError == nil)
            #expect(changed.revisionsChecked == 3, "the new function's replication began at sequence 0")
            #expect(changed.docsWritten == 0)
        }
    }

    @Test func aMissingFunctionFailsTheReplicationWithCouchDBsError() async throws {
        try await withTwoListeners { a, b in
            _ = try b.catalog.create("db")
            var pull = ReplicationConfiguration(source: try RemoteEndpoint(url: b.url + "/db"), target: LocalEndpoint(try a.catalog.create("copy")))
            pull.filter = .function(name: "app/by", queryParameters: [:])
            let status = await Replicator(pull).run()
            #expect(status.lastError?.error == "not_found", "\(String(describing: status.lastError))")
            #expect(status.lastError?.reason == "missing")
        }
    }
}

extension JSON {
    /// An object with `lhs`'s members, then `rhs`'s.
    static func + (lhs: JSON, rhs: JSON) -> JSON {
        guard case .object(var object) = lhs, case .object(let more) = rhs else { return lhs }
        for (key, value) in more { object[key] = value }
        return .object(object)
    }
}

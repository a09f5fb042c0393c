import Foundation
import Store
import Testing

/// `syncd replicate` as a user runs it: local names and URLs, filters, exit statuses.
@Suite struct ReplicateCommandTests {
    @Test func aFilterFunctionRunsOnTheSourceWithItsQueryParameters() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-replicate-filter")
        defer { directory.remove() }
        do {
            let catalog = try Catalog(directory: directory.path)
            let source = try catalog.create("src")
            for n in 0..<12 { try await source.put(["_id": .string("c\(n)"), "even": .bool(n % 2 == 0)]) }
            try await source.put(["_id": "_design/app", "filters": ["parity": "function (doc, req) { return doc.even === (req.query.even === 'yes'); }"]])
            catalog.close()
        }
        let data = ["--data", directory.path]
        let (status, output) = await (try ReplicateProcess(["replicate", "src", "odds", "--filter", "app/parity", "--query-params", #"{"even":"no"}"#] + data)).finish()
        #expect(status == 0, "\(output)")
        let odds = try { () throws -> [String] in
            let catalog = try Catalog(directory: directory.path)
            defer { catalog.close() }
            return try catalog.database("odds").allDocs(AllDocsOptions()).rows.map(\.id)
        }()
        #expect(odds == ["c1", "c11", "c3", "c5", "c7", "c9"])
        let malformed = try ReplicateProcess(["replicate", "src", "x", "--filter", "parity"] + data, captureErrors: true)
        #expect(await malformed.finish().0 == 64)
        #expect(malformed.errors.contains("--filter must be DESIGN/NAME"), "\(malformed.errors)")
        let missing = try ReplicateProcess(["replicate", "src", "y", "--filter", "app/nothing"] + data, captureErrors: true)
        #expect(await missing.finish().0 == 1)
        #expect(missing.errors.contains("missing json key: nothing"), "\(missing.errors)")
    }

    @Test func replicatesLocalDatabasesAndURLsWithFilters() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-replicate-cli")
        defer { directory.remove() }
        do {
            let catalog = try Catalog(directory: directory.path)
            let source = try catalog.create("src")
            for n in 0..<12 { try await source.put(["_id": .string("c\(n)"), "even": .bool(n % 2 == 0)]) }
            catalog.close()
        }
        let data = ["--data", directory.path]
        let (status, output) = await (try ReplicateProcess(["replicate", "src", "copy"] + data)).finish()
        #expect(status == 0)
        #expect(output.split(separator: "\n").last == "stopped: 12/12 changes, read 12, written 12")

        let (filtered, _) = await (try ReplicateProcess(["replicate", "src", "evens", "--selector", #"{"even":true}"#] + data)).finish()
        #expect(filtered == 0)
        let (picked, _) = await (try ReplicateProcess(["replicate", "src", "picked", "--doc-ids", "c1", "c2"] + data)).finish()
        #expect(picked == 0)

        let counts = try { () throws -> (Int, Int) in
            let catalog = try Catalog(directory: directory.path)
            defer { catalog.close() }
            return (try catalog.database("evens").info().docCount, try catalog.database("picked").info().docCount)
        }()
        #expect(counts.0 == 6)
        #expect(counts.1 == 2)

        // To another node's listener (a server on a data directory of its own).
        let remote = directory.path + "/remote"
        try ServeProcess.addAdmin(to: remote)
        let server = try await ServeProcess.start(["--port", "0", "--data", remote])
        let (pushed, pushOutput) = await (try ReplicateProcess(["replicate", "copy", server.adminURL + "/remote-copy", "--create-target"]
                                                                + data)).finish()
        #expect(pushed == 0, "\(pushOutput)")
        let info = try await HTTP.json(.GET, server.adminURL + "/remote-copy").json
        await server.stop()
        #expect(info["doc_count"] == 12)
    }

    @Test func aContinuousReplicationStopsCleanlyOnSIGTERM() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-replicate-cli-continuous")
        defer { directory.remove() }
        try ServeProcess.addAdmin(to: directory.path)
        let server = try await ServeProcess.start(["--port", "0", "--data", directory.path])
        #expect(try await HTTP.json(.PUT, server.adminURL + "/feed").status == 201)
        #expect(try await HTTP.json(.PUT, server.adminURL + "/feed/first", ["v": 1]).status == 201)
        try FileManager.default.createDirectory(atPath: directory.path + "/output", withIntermediateDirectories: false)
        let replicate = try SyncdRun(["replicate", server.adminURL + "/feed", "mirror", "--continuous",
                                      "--data", directory.path + "/client"], in: directory.path + "/output")
        // The first document is through; the process then follows the continuous feed.
        #expect(await replicate.waitForOutput("written 1"), "\(replicate.output)")
        // One that never stops is killed after a minute (a hang, not slowness) and fails on its status.
        let status = await replicate.stop()
        let output = replicate.output
        await server.stop()
        #expect(status == 0, "\(output)")
        #expect(output.contains("written 1"))
    }

    @Test func failuresExitNonZeroWithAClearMessage() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-replicate-cli-errors")
        defer { directory.remove() }
        let data = ["--data", directory.path]
        let missing = try ReplicateProcess(["replicate", "nothing-here", "target"] + data, captureErrors: true)
        let (status, _) = await missing.finish()
        #expect(status == 1)
        #expect(missing.errors.contains("the source database 'nothing-here' does not exist"))

        let refused = try ReplicateProcess(["replicate", "http://user:hunter2@127.0.0.1:1/db", "target"] + data, captureErrors: true)
        let (refusedStatus, refusedOutput) = await refused.finish()
        #expect(refusedStatus != 0)
        #expect(!(refused.errors + refusedOutput).contains("hunter2"))

        let (badSelector, _) = await (try ReplicateProcess(["replicate", "a", "b", "--selector", "[1"] + data)).finish()
        #expect(badSelector != 0)
    }
}

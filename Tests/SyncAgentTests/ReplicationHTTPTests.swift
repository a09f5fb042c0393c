import AsyncHTTPClient
import Foundation
import Store
import SyncAgent
import Testing

/// Replication between two syncd listeners over real HTTP on loopback.
@Suite struct ReplicationHTTPTests {
    @Test func pushThenPullBetweenTwoListeners() async throws {
        try await withTwoListeners { a, b in
            let local = try a.catalog.create("notes")
            _ = try b.catalog.create("notes")
            try await local.putDocuments(count: 300, prefix: "n")
            let remote = try RemoteEndpoint(url: b.url + "/notes")

            var push = ReplicationConfiguration(source: LocalEndpoint(local), target: remote)
            push.batchSize = 64
            let pushed = await Replicator(push).run()
            #expect(pushed.lastError == nil)
            #expect(pushed.docsWritten == 300)
            try await ReplicationTesting.expectSameDocuments(local, try b.catalog.database("notes"))

            try await b.catalog.database("notes").putDocuments(count: 50, prefix: "fromB")
            let pulled = await Replicator(ReplicationConfiguration(source: remote, target: LocalEndpoint(local))).run()
            #expect(pulled.lastError == nil)
            #expect(pulled.docsWritten == 50)
            #expect(try local.info().docCount == 350)
            try await ReplicationTesting.expectSameDocuments(local, try b.catalog.database("notes"))
        }
    }

    @Test func bothDirectionsAtOnceConvergeOnConflicts() async throws {
        try await withTwoListeners { a, b in
            let onA = try a.catalog.create("db")
            let onB = try b.catalog.create("db")
            for database in [onA, onB] {
                try await database.putDocuments(count: 20, prefix: "same")
                try await database.put(["_id": "c", "_rev": "1-abc", "_revisions": ["start": 1, "ids": ["abc"]]], newEdits: false)
            }
            try await onA.putDocuments(count: 30, prefix: "onlyA")
            try await onB.putDocuments(count: 40, prefix: "onlyB")
            try await onA.put(["_id": "c", "_rev": "1-abc", "from": "a"])
            let bRev = try await onB.put(["_id": "c", "_rev": "1-abc", "from": "b"]).result.get()
            try await onB.put(["_id": "c", "_rev": .string(bRev.description), "from": "b again"])
            let remoteA = try RemoteEndpoint(url: a.url + "/db")
            let remoteB = try RemoteEndpoint(url: b.url + "/db")

            async let forward = Replicator(ReplicationConfiguration(source: remoteA, target: remoteB)).run()
            async let backward = Replicator(ReplicationConfiguration(source: remoteB, target: remoteA)).run()
            let (f, r) = await (forward, backward)
            #expect(f.lastError == nil && r.lastError == nil)

            let docA = try await HTTP.json(.GET, a.url + "/db/c?conflicts=true").json
            let docB = try await HTTP.json(.GET, b.url + "/db/c?conflicts=true").json
            #expect(docA["_rev"] == docB["_rev"])
            #expect(docA["_rev"]?.stringValue?.hasPrefix("3-") == true)
            #expect(docA["from"] == "b again")
            #expect(docA["_conflicts"] == docB["_conflicts"])
            #expect(docA["_conflicts"]?.arrayValue?.count == 1)
            #expect(try onA.info().docCount == 91)
            try await ReplicationTesting.expectSameDocuments(onA, onB)
        }
    }

    @Test func deletionsAndLargeBinaryAttachments() async throws {
        try await withTwoListeners { a, b in
            let source = try a.catalog.create("files")
            let large = ReplicationTesting.randomBytes(6 << 20)
            let binary = (0..<256).map { UInt8($0) }
            try await source.put([
                "_id": "blob",
                "_attachments": .object([
                    "large.bin": .object(["content_type": "application/octet-stream", "data": .string(Data(large).base64EncodedString())]),
                    "all-bytes": .object(["content_type": "application/x-test", "data": .string(Data(binary).base64EncodedString())]),
                ]),
            ])
            try await source.putDocuments(count: 10, prefix: "gone")
            for n in 0..<10 { try await source.delete(id: "gone\(n)", revision: try source.document(id: "gone\(n)").revision) }
            let remoteA = try RemoteEndpoint(url: a.url + "/files")
            let remoteB = try RemoteEndpoint(url: b.url + "/files")
            var configuration = ReplicationConfiguration(source: remoteA, target: remoteB)
            configuration.createTarget = true
            let status = await Replicator(configuration).run()
            #expect(status.lastError == nil)
            #expect(status.docsWritten == 11)

            let fetchedLarge = try await HTTP.request(.GET, b.url + "/files/blob/large.bin")
            #expect(fetchedLarge.status == 200)
            #expect(fetchedLarge.body == large)
            #expect(try await HTTP.request(.GET, b.url + "/files/blob/all-bytes").body == binary)
            let info = try await HTTP.json(.GET, b.url + "/files").json
            #expect(info["doc_count"] == 1)
            #expect(info["doc_del_count"] == 10)
            #expect(try await HTTP.json(.GET, b.url + "/files/gone3").status == 404)

            // An edit that keeps the attachments: the source sends them as stubs (atts_since).
            let current = try source.document(id: "blob")
            try await source.put(.object(current.json().objectValue!.withMembers(["edited": true])))
            let inspected = InspectedEndpoint(remoteA)
            let again = await Replicator(ReplicationConfiguration(source: inspected, target: remoteB)).run()
            #expect(again.lastError == nil)
            #expect(again.docsWritten == 1)
            let sent = try #require(inspected.fetchedRevisions.first?.json["_attachments"])
            #expect(sent["large.bin"]?["stub"] == true)
            #expect(sent["large.bin"]?["data"] == nil)
            #expect(try await HTTP.request(.GET, b.url + "/files/blob/large.bin").body == large)
            #expect(try await HTTP.json(.GET, b.url + "/files/blob").json["edited"] == true)
        }
    }

    @Test func pullFiltersRunOnTheRemote() async throws {
        try await withTwoListeners { a, b in
            let source = try b.catalog.create("src")
            for n in 0..<30 {
                try await source.put(["_id": .string("p\(n)"), "colour": n % 3 == 0 ? "red" : "blue"])
            }
            let local = try a.catalog.create("red")
            let remote = try RemoteEndpoint(url: b.url + "/src")
            var configuration = ReplicationConfiguration(source: remote, target: LocalEndpoint(local))
            configuration.filter = .selector(["colour": "red"])
            let bySelector = await Replicator(configuration).run()
            #expect(bySelector.lastError == nil)
            #expect(bySelector.docsRead == 10)
            #expect(try local.info().docCount == 10)

            let picked = try a.catalog.create("picked")
            configuration.target = LocalEndpoint(picked)
            configuration.filter = .documentIDs(["p1", "p2", "p29"])
            let byIDs = await Replicator(configuration).run()
            #expect(byIDs.lastError == nil)
            #expect(byIDs.docsRead == 3)
            #expect(try picked.info().docCount == 3)
            #expect(try picked.document(id: "p29").body["colour"] == "blue")
        }
    }

    @Test func continuousPushAndPullPickUpNewWrites() async throws {
        try await withTwoListeners { a, b in
            let local = try a.catalog.create("live")
            _ = try b.catalog.create("live")
            let remote = try RemoteEndpoint(url: b.url + "/live")
            var push = ReplicationConfiguration(source: LocalEndpoint(local), target: remote)
            push.continuous = true
            var pull = ReplicationConfiguration(source: remote, target: LocalEndpoint(local))
            pull.continuous = true
            let pusher = Replicator(push)
            let puller = Replicator(pull)
            pusher.start()
            puller.start()
            try await ReplicationTesting.waitFor(pusher, "push idle") { $0.activity == .idle }
            try await ReplicationTesting.waitFor(puller, "pull idle") { $0.activity == .idle }

            try await local.put(["_id": "written-on-a"])
            let put = try await HTTP.json(.PUT, b.url + "/live/written-on-b", ["v": 2])
            #expect(put.status == 201)
            try await ReplicationTesting.waitFor(pusher, "the push") { $0.docsWritten >= 1 }
            try await ReplicationTesting.waitFor(puller, "the pull") { $0.docsWritten >= 1 }
            #expect(try await HTTP.json(.GET, b.url + "/live/written-on-a").status == 200)
            #expect(try local.document(id: "written-on-b").body["v"] == 2)

            await pusher.stop()
            await puller.stop()
            #expect(pusher.status.lastError == nil && puller.status.lastError == nil)
        }
    }

    @Test func samePeerAtAnotherPortResumesWithNothingResent() async throws {
        try await withTwoListeners { a, _ in
            let directory = try TemporaryDirectory(prefix: "syncd-moving-peer")
            defer { directory.remove() }
            let local = try a.catalog.create("mine")
            try await local.putDocuments(count: 120, prefix: "m")

            let first = try await TestListener.start(directory: directory.path)
            let firstURL = first.url
            do {
                _ = try first.catalog.create("theirs")
                let remote = try RemoteEndpoint(url: firstURL + "/theirs")
                let pushed = await Replicator(ReplicationConfiguration(source: LocalEndpoint(local), target: remote)).run()
                await remote.shutdown()
                #expect(pushed.docsWritten == 120)
            } catch {
                await first.stop()
                throw error
            }
            await first.stop()

            // The same node (same data directory, same UUIDs) comes back on another port.
            let moved = try await TestListener.start(directory: directory.path)
            do {
                #expect(moved.url != firstURL)
                let remote = try RemoteEndpoint(url: moved.url + "/theirs")
                let again = await Replicator(ReplicationConfiguration(source: LocalEndpoint(local), target: remote)).run()
                await remote.shutdown()
                #expect(again.lastError == nil)
                #expect(again.docsRead == 0)
                #expect(again.docsWritten == 0)
                #expect(again.completed == 0)
                #expect(try moved.catalog.database("theirs").info().docCount == 120)
            } catch {
                await moved.stop()
                throw error
            }
            await moved.stop()
        }
    }

    @Test func continuousReplicationSurvivesTheRemoteGoingAwayAndComingBack() async throws {
        try await withTwoListeners { a, _ in
            let directory = try TemporaryDirectory(prefix: "syncd-flaky-peer")
            defer { directory.remove() }
            let local = try a.catalog.create("outbox")
            try await local.putDocuments(count: 20, prefix: "before")

            try ServeProcess.addAdmin(to: directory.path)
            var server = try await ServeProcess.start(["--port", "0", "--data", directory.path])
            var replicator: Replicator?
            do {
                let port = try #require(server.url.split(separator: ":").last.map(String.init))
                #expect(try await HTTP.json(.PUT, server.adminURL + "/inbox").status == 201)
                let remote = RemoteEndpoint(RemoteEndpoint.Configuration(url: try RemoteURL(server.adminURL + "/inbox"), requestTimeout: .seconds(5)))
                var configuration = ReplicationConfiguration(source: LocalEndpoint(local), target: remote)
                configuration.continuous = true
                configuration.retry = RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(500))
                configuration.checkpointInterval = .milliseconds(200)
                let running = Replicator(configuration)
                replicator = running
                running.start()
                try await ReplicationTesting.waitFor(running, "the first documents") { $0.docsWritten == 20 && $0.activity == .idle }

                await server.stop(signal: SIGKILL)
                try await local.putDocuments(count: 15, prefix: "during")
                try await ReplicationTesting.waitFor(running, "offline") { $0.activity == .offline }
                #expect(running.status.lastError?.isTransient == true)

                server = try await ServeProcess.start(["--port", port, "--data", directory.path])
                try await ReplicationTesting.waitFor(running, "catching up after the outage", seconds: 20) { $0.docsWritten >= 35 }
                try await ReplicationTesting.waitFor(running, "idle again", seconds: 20) { $0.activity == .idle }
                let info = try await HTTP.json(.GET, server.adminURL + "/inbox").json
                #expect(info["doc_count"] == 35)
                await running.stop()
                await remote.shutdown()
            } catch {
                await replicator?.stop()
                await server.stop()
                throw error
            }
            await server.stop()
        }
    }

    @Test func aKilledReplicationResumesFromItsCheckpoint() async throws {
        try await withTwoListeners { a, b in
            let total = 20_000
            try await a.catalog.create("big").putDocuments(count: total, prefix: "k")
            _ = try b.catalog.create("big")
            let target = try b.catalog.database("big")
            let arguments = ["replicate", a.url + "/big", b.url + "/big", "--batch-size", "25", "--checkpoint-interval", "0.1"]
            let first = try ReplicateProcess(arguments)
            while try target.info().docCount < total / 4 {
                #expect(first.process.isRunning, "the replication ended before it could be killed")
                if !first.process.isRunning { return }
                try await Task.sleep(for: .milliseconds(10))
            }
            kill(first.process.processIdentifier, SIGKILL)
            _ = await first.finish()
            let copiedBeforeKill = try target.info().docCount
            #expect(copiedBeforeKill < total, "killed after the end")

            // The checkpoints the killed run left: never past what the target holds.
            let source = try RemoteEndpoint(url: a.url + "/big")
            let targetEndpoint = try RemoteEndpoint(url: b.url + "/big")
            let id = ReplicationID(sourceIdentity: try await source.identity(), targetIdentity: try await targetEndpoint.identity(),
                                   sourceIsLocal: false, targetIsLocal: false, filter: nil)
            await source.shutdown()
            await targetEndpoint.shutdown()
            func checkpointed(_ database: Database) throws -> Int {
                let seq = try database.localDocument(id: "_local/" + id.value).body["source_last_seq"]
                return try #require(seq?.intValue ?? seq?.stringValue.flatMap { Int($0) }, "no sequence in \(String(describing: seq))")
            }
            let onSource = try checkpointed(try a.catalog.database("big"))
            let onTarget = try checkpointed(target)
            #expect(onTarget > 0)
            #expect(max(onSource, onTarget) <= copiedBeforeKill, "a checkpoint passed what was written")

            let second = try ReplicateProcess(arguments, captureErrors: true)
            let (status, output) = await second.finish()
            #expect(status == 0, "\(output)\n\(second.errors)")
            #expect(try target.info().docCount == total)
            // The rerun resumed from a checkpoint: it went through only the changes after it.
            let changes = try #require(output.split(separator: "\n").last.flatMap { line in
                line.split(separator: ":").dropFirst().first?.split(separator: "/").first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            }, "\(output)")
            #expect(changes <= total - min(onSource, onTarget), "\(output)")
            #expect(changes >= total - max(onSource, onTarget), "\(output)")
        }
    }
}

/// Two in-process listeners, stopped after `body`.
func withTwoListeners(_ body: (TestListener, TestListener) async throws -> Void) async throws {
    let a = try await TestListener.start()
    let b = try await TestListener.start()
    do {
        try await body(a, b)
    } catch {
        await a.stop()
        await b.stop()
        throw error
    }
    await a.stop()
    await b.stop()
}

/// A `syncd replicate` child process.
final class ReplicateProcess: @unchecked Sendable {
    let process = Process()
    private let output = Pipe()
    private let errorOutput = Pipe()
    private let captureErrors: Bool
    /// What it wrote to standard error (with `captureErrors`), once finished.
    private(set) var errors = ""

    /// Runs `syncd ARGUMENTS`, or `LAUNCHER… syncd ARGUMENTS` (such as `unshare --net …`).
    init(_ arguments: [String], captureErrors: Bool = false, launcher: [String] = []) throws {
        self.captureErrors = captureErrors
        let command = launcher + [ServeProcess.executable] + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.standardOutput = output
        process.standardError = captureErrors ? errorOutput : FileHandle.nullDevice
        try process.run()
    }

    /// Waits for the exit; returns the status and what it printed. The blocking reads run on
    /// a dispatch queue, never on the (two-thread) cooperative pool the other tests need.
    func finish() async -> (Int32, String) {
        let process = self.process
        let handle = output.fileHandleForReading
        let errorHandle = captureErrors ? errorOutput.fileHandleForReading : nil
        let (text, errors) = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let group = DispatchGroup()
                nonisolated(unsafe) var errors = ""
                if let errorHandle {
                    DispatchQueue.global().async(group: group) {
                        errors = String(decoding: errorHandle.readDataToEndOfFile(), as: UTF8.self)
                    }
                }
                let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
                group.wait()
                process.waitUntilExit()
                continuation.resume(returning: (text, errors))
            }
        }
        self.errors = errors
        return (process.terminationStatus, text)
    }
}

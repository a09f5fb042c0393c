import Foundation
import Store
import SyncAgent
import Testing

/// `syncd replicate` facing awkward input and unreachable peers: credentials never
/// shown, errors in plain words and at once, a stop on request never an error.
@Suite struct ReplicateCommandErrorTests {
    /// Passwords holding `/ ? # @ :` and percent escapes, in URLs that parse and URLs that do not.
    static let passwords = ["pa/ss", "pa?ss", "pa#ss", "p@ss", "pa:ss", "pa%2Fss", "pa%zzss", "pa ss", "1234/ss"]

    @Test(arguments: passwords)
    func noCredentialInAnyMessage(password: String) async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-replicate-redact")
        defer { directory.remove() }
        let secret = password.replacingOccurrences(of: "%2F", with: "/")
        for url in ["http://alice:\(password)@127.0.0.1:1/db", "htp://alice:\(password)@127.0.0.1:1/db",
                    "http://alice:\(password)@127.0.0.1:1/"] {
            let run = try ReplicateProcess(["replicate", url, "copy", "--data", directory.path], captureErrors: true)
            let (status, output) = await run.finish()
            #expect(status != 0)
            #expect(!run.errors.isEmpty)
            for shown in [run.errors, output] {
                #expect(!shown.contains(password), "\(shown)")
                #expect(!shown.contains(secret), "\(shown)")
                #expect(!shown.contains("ss@"), "\(shown)")
            }
        }
        for url in ["http://alice:\(password)@127.0.0.1:1/db", "alice:\(password)@127.0.0.1:1/db"] {
            #expect(!RemoteURL.redact("error: \(url) failed").contains(secret))
            if let parsed = try? RemoteURL(url) {
                #expect(!parsed.description.contains(secret))
                #expect(parsed.credentials?.password == password.removingPercentEncoding ?? password)
            }
        }
    }

    @Test func docIDsSeparatedByCommas() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-replicate-doc-ids")
        defer { directory.remove() }
        do {
            let catalog = try Catalog(directory: directory.path)
            let source = try catalog.create("src")
            for id in ["a", "b", "c", "d"] { try await source.put(["_id": .string(id)]) }
            catalog.close()
        }
        let data = ["--data", directory.path]
        let (status, output) = await (try ReplicateProcess(["replicate", "src", "picked", "--doc-ids", "a,b", "c"] + data)).finish()
        #expect(status == 0, "\(output)")
        let catalog = try Catalog(directory: directory.path)
        defer { catalog.close() }
        #expect(try catalog.database("picked").allDocs(AllDocsOptions()).rows.map(\.id) == ["a", "b", "c"])
        let (empty, _) = await (try ReplicateProcess(["replicate", "src", "none", "--doc-ids", ","] + data)).finish()
        #expect(empty != 0)
    }

    /// A host with no route to it: the error says so in plain words, on the first attempt.
    /// The process runs in a network namespace of its own, whose only route there is `unreachable`.
    @Test func anUnreachableHostFailsAtOnceInPlainWords() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-replicate-unreachable")
        defer { directory.remove() }
        let script = "ip link set lo up && ip route add unreachable 192.0.2.0/24 && exec \"$0\" \"$@\""
        let run = try ReplicateProcess(["replicate", "http://192.0.2.7:5984/db", "copy", "--data", directory.path],
                                       captureErrors: true, launcher: ["/usr/bin/unshare", "--net", "sh", "-c", script])
        let (status, output) = await run.finish()
        #expect(status == 1, "\(output) \(run.errors)")
        #expect(run.errors.contains("no route to host"), "\(run.errors)")
        #expect(!run.errors.contains("errno"), "\(run.errors)")
        #expect(!output.contains("offline"), "one attempt, no retries: \(output)")
    }

    /// An HTTPS server whose certificate nothing vouches for (another agent): a final
    /// error at once, in plain words, naming the node ID it presented and the way forward.
    @Test func anUntrustedCertificateFailsAtOnceNamingTheNodeID() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-replicate-untrusted")
        defer { directory.remove() }
        let server = try await TestListener.start { $0.tls = true }
        let id = server.listener.node.identity.id.description
        let url = server.anonymousURL + "/db"
        let run = try ReplicateProcess(["replicate", url, "copy", "--data", directory.path], captureErrors: true)
        let (status, output) = await run.finish()
        #expect(status == 1, "\(output) \(run.errors)")
        #expect(!output.contains("offline"), "a trust failure is final: one attempt, no retries: \(output)")
        #expect(run.errors.contains("the server's certificate is not trusted (its node ID is \(id))"), "\(run.errors)")
        #expect(run.errors.contains("--fingerprint") && run.errors.contains("--peer"), "\(run.errors)")
        for leak in ["NIOSSL", "BoringSSL", ".build", "handshakeFailed", "Error:"] {
            #expect(!run.errors.contains(leak), "\(run.errors)")
        }

        // With that ID pinned, the trust question is settled: what remains is the login.
        let pinned = try ReplicateProcess(["replicate", url, "copy", "--fingerprint", id, "--data", directory.path], captureErrors: true)
        let (pinnedStatus, _) = await pinned.finish()
        #expect(pinnedStatus != 0)
        #expect(!pinned.errors.contains("not trusted") && pinned.errors.contains("401"), "\(pinned.errors)")
        await server.stop()
    }

    /// Ctrl-C while a continuous replication is offline ends it cleanly: exit 0, no error.
    @Test func interruptingAnOfflineContinuousReplicationIsNoError() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-replicate-offline")
        defer { directory.remove() }
        let run = try SyncdRun(["replicate", "http://127.0.0.1:1/db", "copy", "--continuous", "--data", directory.path + "/data"],
                               in: directory.path)
        // Past the first refused attempt: offline, retrying.
        #expect(await run.waitForOutput("offline"), "\(run.output) \(run.errors)")
        kill(run.process.processIdentifier, SIGINT)
        let status = await run.finish()
        let output = run.output
        #expect(output.contains("offline"), "\(output)")
        #expect(output.contains("connection refused"), "\(output)")
        #expect(status == 0, "\(output) \(run.errors)")
        #expect(!run.errors.contains("replication failed"), "\(run.errors)")
        #expect(!run.errors.contains("error:"), "\(run.errors)")
    }
}

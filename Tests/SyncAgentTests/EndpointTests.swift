import Foundation
import NIOSSL
import Store
@testable import SyncAgent
import Testing

/// The remote endpoint: URLs and credentials, authentication, TLS trust, fallbacks.
@Suite struct EndpointTests {
    @Test func parsesDatabaseURLsAndKeepsCredentialsOut() throws {
        let url = try RemoteURL("https://alice:s%40cret@example.org:6984/prefix/my%2Fdb")
        #expect(url.scheme == "https" && url.host == "example.org" && url.port == 6984)
        #expect(url.basePath == "/prefix")
        #expect(url.database == "my/db")
        #expect(url.credentials?.user == "alice")
        #expect(url.credentials?.password == "s@cret")
        #expect(url.description == "https://example.org:6984/prefix/my%2Fdb")
        #expect(!url.description.contains("cret"))
        #expect(try RemoteURL("http://[::1]/db").origin == "http://[::1]")
        #expect(RemoteURL.redact("http://bob:pw@host/db failed") == "http://***@host/db failed")
        expect(#expect(throws: EndpointError.self) { try RemoteURL("ftp://host/db") },
               400, "bad_request", reasonContaining: "not an http(s) URL")
        expect(#expect(throws: EndpointError.self) { try RemoteURL("http://host/") },
               400, "bad_request", reasonContaining: "the URL names no database")
    }

    @Test func basicAuthenticationAndWrongPasswordsFailAtOnceWithoutLeakingThem() async throws {
        let server = try await TestListener.start(users: ["alice": "correct horse"])
        do {
            let source = try server.catalog.create("private")
            try await source.setSecurity(["members": ["names": ["alice"]]])
            try await source.putDocuments(count: 5, prefix: "p")
            let pair = try LocalPair()
            defer { pair.close() }
            let authority = server.anonymousURL.replacingOccurrences(of: "http://", with: "")

            let good = try RemoteEndpoint(url: "http://alice:correct%20horse@\(authority)/private")
            let copied = await Replicator(ReplicationConfiguration(source: good, target: LocalEndpoint(pair.a))).run()
            await good.shutdown()
            #expect(copied.lastError == nil)
            #expect(copied.docsWritten == 5)

            let bad = try RemoteEndpoint(url: "http://alice:wrong-secret@\(authority)/private")
            let started = ContinuousClock.now
            let refused = await Replicator(ReplicationConfiguration(source: bad, target: LocalEndpoint(pair.b))).run()
            await bad.shutdown()
            #expect(ContinuousClock.now - started < .seconds(30), "an authentication failure is not retried")
            let error = try #require(refused.lastError)
            expect(error, 401, "unauthorized", reasonContaining: "Name or password is incorrect.")
            #expect(!error.isTransient)
            #expect(!error.description.contains("wrong-secret"))
            #expect(refused.activity == .stopped)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test func httpsWithAPinnedCertificateOrFingerprint() async throws {
        let server = try await TestListener.start { $0.tls = true }
        do {
            #expect(server.url.hasPrefix("https://"))
            let source = try server.catalog.create("secure")
            try await source.putDocuments(count: 3, prefix: "s")
            let pair = try LocalPair()
            defer { pair.close() }
            let certificate = try NIOSSLCertificate(bytes: server.listener.node.identity.certificateDER, format: .der)

            let pinned = try RemoteEndpoint(url: server.url + "/secure", trust: .certificate(certificate))
            let byCertificate = await Replicator(ReplicationConfiguration(source: pinned, target: LocalEndpoint(pair.a))).run()
            await pinned.shutdown()
            #expect(byCertificate.lastError == nil)
            #expect(byCertificate.docsWritten == 3)

            let fingerprinted = try RemoteEndpoint(url: server.url + "/secure", trust: .fingerprint(server.listener.node.identity.fingerprint.uppercased()))
            let byFingerprint = await Replicator(ReplicationConfiguration(source: fingerprinted, target: LocalEndpoint(pair.b))).run()
            await fingerprinted.shutdown()
            #expect(byFingerprint.lastError == nil)
            #expect(byFingerprint.docsWritten == 3)

            let impostor = try RemoteEndpoint(url: server.url + "/secure", trust: .fingerprint(String(repeating: "ab", count: 32)))
            let mismatch = await #expect(throws: EndpointError.self) { try await impostor.identity() }
            expect(mismatch, 495, "certificate_mismatch",
                   reasonContaining: "does not have the pinned fingerprint: its node ID is \(server.listener.node.identity.id)")
            #expect(mismatch?.isTransient == false)
            await impostor.shutdown()

            // With no pin, the system's roots do not trust a node's own certificate.
            let untrusted = try RemoteEndpoint(url: server.url + "/secure")
            expect(await #expect(throws: EndpointError.self) { try await untrusted.identity() }, 495, "certificate_untrusted",
                   reasonContaining: "the server's certificate is not trusted (its node ID is \(server.listener.node.identity.id))")
            await untrusted.shutdown()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test func fetchesWithOpenRevsWhereBulkGetIsMissing() async throws {
        try await withTwoListeners { a, _ in
            let source = try a.catalog.create("old")
            let content = ReplicationTesting.randomBytes(70_000)
            try await source.put(["_id": "att", "_attachments": .object([
                "f": .object(["content_type": "application/octet-stream", "data": .string(Data(content).base64EncodedString())]),
            ])])
            try await source.putDocuments(count: 12, prefix: "o")
            let pair = try LocalPair()
            defer { pair.close() }
            let remote = try RemoteEndpoint(url: a.url + "/old")
            remote.bulkGetSupported.withLock { $0 = false }
            let status = await Replicator(ReplicationConfiguration(source: remote, target: LocalEndpoint(pair.a))).run()
            await remote.shutdown()
            #expect(status.lastError == nil)
            #expect(status.docsWritten == 13)
            #expect(try pair.a.attachmentContent(try pair.a.attachment(documentID: "att", name: "f")) == content)
        }
    }

    @Test func couchErrorsBecomeTypedErrors() async throws {
        try await withTwoListeners { a, _ in
            let missing = try RemoteEndpoint(url: a.url + "/no-such-db")
            do throws(EndpointError) {
                try await missing.prepare(createIfMissing: false)
                Issue.record("a missing database was accepted")
            } catch {
                #expect(error.status == 404)
                #expect(error.error == "not_found")
                #expect(error.isNotFound && !error.isTransient)
            }
            try await missing.prepare(createIfMissing: true)
            #expect(a.catalog.exists("no-such-db"))
            #expect(try await missing.localDocument(id: "nothing") == nil)
            let rev = try await missing.putLocalDocument(id: "cp", ["v": 1])
            expect(await #expect(throws: EndpointError.self) { try await missing.putLocalDocument(id: "cp", ["_rev": "0-9", "v": 2]) },
                   409, "conflict", reasonContaining: "Document update conflict.")
            _ = try await missing.putLocalDocument(id: "cp", ["_rev": .string(rev), "v": 2])
            #expect(try await missing.localDocument(id: "cp")?["v"] == 2)
            await missing.shutdown()
        }
    }

    /// Expects `error` to be an answer of `status` with CouchDB error `name` and a reason containing `reason`.
    private func expect(_ error: EndpointError?, _ status: Int, _ name: String, reasonContaining reason: String,
                        sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(error?.status == status, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.error == name, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.reason.contains(reason) == true, "\(String(describing: error))", sourceLocation: sourceLocation)
    }
}

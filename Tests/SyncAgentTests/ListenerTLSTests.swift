import AsyncHTTPClient
import Foundation
import NIOSSL
import Store
import SyncAgent
import XCTest

/// The node identity, and HTTPS with the node's certificate pinned by the client.
final class ListenerTLSTests: XCTestCase {
    func testIdentityIsMadeOnceWithAPrivateKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let first = try NodeIdentity.loadOrCreate(in: directory.path)
        let again = try NodeIdentity.loadOrCreate(in: directory.path)
        XCTAssertEqual(first.uuid, again.uuid)
        XCTAssertEqual(first.fingerprint, again.fingerprint)
        XCTAssertEqual(first.fingerprint.count, 64)
        let mode = try FileManager.default.attributesOfItem(atPath: directory.path + "/node-key.pem")[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        let other = try TemporaryDirectory()
        defer { other.remove() }
        XCTAssertNotEqual(try NodeIdentity.loadOrCreate(in: other.path).fingerprint, first.fingerprint)
    }

    func testHTTPSWithThePinnedNodeCertificate() async throws {
        let server = try await startListener { $0.tls = true }
        XCTAssertTrue(server.anonymousURL.hasPrefix("https://127.0.0.1:"))
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = try TLSSettings.client(trusting: NIOSSLCertificate(bytes: server.listener.node.identity.certificateDER, format: .der))
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let welcome = try await HTTP.json(.GET, server.url + "/", client: client)
            XCTAssertEqual(welcome.status, 200)
            XCTAssertEqual(welcome.json["uuid"]?.stringValue, server.listener.node.identity.uuid)
            try await assertEqual(try await HTTP.json(.PUT, server.url + "/secure", client: client).status, 201)
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()

        // A client pinning some other node's certificate is refused.
        let stranger = try TemporaryDirectory()
        defer { stranger.remove() }
        var wrong = HTTPClient.Configuration()
        wrong.tlsConfiguration = try TLSSettings.client(trusting: NIOSSLCertificate(bytes: try NodeIdentity.loadOrCreate(in: stranger.path).certificateDER, format: .der))
        wrong.connectionPool.retryConnectionEstablishment = false
        let suspicious = HTTPClient(eventLoopGroupProvider: .singleton, configuration: wrong)
        do {
            _ = try await HTTP.json(.GET, server.url + "/", client: suspicious)
            XCTFail("a certificate other than the pinned one must be refused")
        } catch {
            assertHandshakeFailed(error, "CERTIFICATE_VERIFY_FAILED")
        }
        try await suspicious.shutdown()

        // Plain HTTP to the TLS port gets no answer: the connection is closed.
        do {
            let plain = try await HTTP.request(.GET, server.url.replacingOccurrences(of: "https://", with: "http://") + "/", timeout: .seconds(5))
            XCTFail("plain HTTP to the TLS port was answered \(plain.status)")
        } catch {
            XCTAssertEqual(error as? HTTPClientError, .remoteConnectionClosed, "\(error)")
        }
    }

    /// TLS 1.0 and 1.1 are refused by the server (a protocol_version alert); 1.2 and 1.3 are served.
    func testOnlyTLS12AndLaterAreAccepted() async throws {
        let server = try await startListener { $0.tls = true }
        let certificate = try NIOSSLCertificate(bytes: server.listener.node.identity.certificateDER, format: .der)
        for (version, accepted) in [(TLSVersion.tlsv1, false), (.tlsv11, false), (.tlsv12, true), (.tlsv13, true)] {
            // The client offers this version and no other.
            var tls = try TLSSettings.client(trusting: certificate)
            tls.minimumTLSVersion = version
            tls.maximumTLSVersion = version
            var configuration = HTTPClient.Configuration()
            configuration.tlsConfiguration = tls
            configuration.connectionPool.retryConnectionEstablishment = false
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            do {
                let status = try await HTTP.json(.GET, server.anonymousURL + "/_up", client: client).status
                XCTAssertTrue(accepted, "\(version) was served")
                XCTAssertEqual(status, 200, "\(version)")
            } catch {
                XCTAssertFalse(accepted, "\(version): \(error)")
                // The server's alert, received by the client: not a failure of the client's own.
                assertHandshakeFailed(error, "TLSV1_ALERT_PROTOCOL_VERSION", "\(version)")
            }
            try await client.shutdown()
        }
    }

    /// A session cookie given over HTTPS is `Secure` (never sent in clear) and `SameSite=Lax`, as the one that ends it.
    func testSessionCookiesOverHTTPSAreSecure() async throws {
        let server = try await startListener(users: ["bob": "hunter2"]) { $0.tls = true }
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = try TLSSettings.client(trusting: NIOSSLCertificate(bytes: server.listener.node.identity.certificateDER, format: .der))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let login = try await HTTP.request(.POST, server.anonymousURL + "/_session", json: ["name": "bob", "password": "hunter2"], client: client)
            XCTAssertEqual(login.status, 200)
            XCTAssertEqual(login.header("Set-Cookie")?.hasSuffix("; HttpOnly; SameSite=Lax; Secure"), true, "\(login.header("Set-Cookie") ?? "none")")
            let logout = try await HTTP.request(.DELETE, server.anonymousURL + "/_session", client: client)
            XCTAssertEqual(logout.header("Set-Cookie")?.hasSuffix("; HttpOnly; SameSite=Lax; Secure"), true)
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    /// Over TLS 1.2 the listener takes AEAD suites only (Mozilla's "intermediate"): a client
    /// offering one CBC or SHA-1 suite alone is refused at the handshake.
    func testTLS12AcceptsAEADSuitesOnly() async throws {
        let server = try await startListener { $0.tls = true }
        let certificate = try NIOSSLCertificate(bytes: server.listener.node.identity.certificateDER, format: .der)
        let suites: [(NIOTLSCipher, Bool)] = [
            (.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, true), (.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, true),
            (.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, true),
            (.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, false), (.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, false),
            (.TLS_RSA_WITH_AES_128_GCM_SHA256, false), (.TLS_RSA_WITH_AES_128_CBC_SHA, false),
        ]
        for (suite, accepted) in suites {
            var tls = try TLSSettings.client(trusting: certificate)
            tls.maximumTLSVersion = .tlsv12
            tls.cipherSuiteValues = [suite]
            var configuration = HTTPClient.Configuration()
            configuration.tlsConfiguration = tls
            configuration.connectionPool.retryConnectionEstablishment = false
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            do {
                let status = try await HTTP.json(.GET, server.anonymousURL + "/_up", client: client).status
                XCTAssertTrue(accepted, "\(suite) was served")
                XCTAssertEqual(status, 200)
            } catch {
                XCTAssertFalse(accepted, "\(suite): \(error)")
                assertHandshakeFailed(error, "SSLV3_ALERT_HANDSHAKE_FAILURE", "\(suite)")
            }
            try await client.shutdown()
        }
    }

    /// Asserts that `error` is a failed TLS handshake whose BoringSSL error stack names `reason`.
    private func assertHandshakeFailed(_ error: any Error, _ reason: String, _ message: String = "",
                                       file: StaticString = #filePath, line: UInt = #line) {
        guard case .handshakeFailed(.sslError(let stack)) = error as? NIOSSLError else {
            return XCTFail("\(message) expected a failed TLS handshake (\(reason)), got \(error)", file: file, line: line)
        }
        XCTAssertTrue(stack.contains { "\($0)".contains(":\(reason) ") }, "\(message) \(stack)", file: file, line: line)
    }
}

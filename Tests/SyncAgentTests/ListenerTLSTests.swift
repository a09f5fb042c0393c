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

    /// Asserts that `error` is a failed TLS handshake whose BoringSSL error stack names `reason`.
    private func assertHandshakeFailed(_ error: any Error, _ reason: String, _ message: String = "",
                                       file: StaticString = #filePath, line: UInt = #line) {
        guard case .handshakeFailed(.sslError(let stack)) = error as? NIOSSLError else {
            return XCTFail("\(message) expected a failed TLS handshake (\(reason)), got \(error)", file: file, line: line)
        }
        XCTAssertTrue(stack.contains { "\($0)".contains(":\(reason) ") }, "\(message) \(stack)", file: file, line: line)
    }
}

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import Testing

@testable import SyncAgent

/// What a person reads when a connection fails: one plain sentence, never a
/// library's type name or a source path.
struct ConnectionFailureTests {
    static let libraryErrors: [(any Error, String)] = [
        (IOError(errnoCode: ECONNREFUSED, reason: "connect"), "connection refused"),
        (IOError(errnoCode: ECONNRESET, reason: "read"), "the connection was reset"),
        (IOError(errnoCode: EACCES, reason: "connect"), "the connection failed: Permission denied"),
        (HTTPClientError.remoteConnectionClosed, "the server closed the connection"),
        (HTTPClientError.invalidURL, "the HTTP request failed: invalid url"),
        (HTTPClientError.writeTimeout, "the HTTP request failed: write timeout"),
        (ChannelError.ioOnClosedChannel, "the connection failed"),
        (NIOSSLError.uncleanShutdown, "the server closed the TLS connection abruptly"),
    ]

    @Test(arguments: 0..<libraryErrors.count)
    func aLibraryErrorIsSaidInPlainWords(_ index: Int) {
        let (error, words) = Self.libraryErrors[index]
        let said = ConnectionFailure.plain(error)
        #expect(said == words)
        for name in ["Error", "NIO", "HTTPClient", ".build", "("] { #expect(!said.contains(name), "\(said)") }
    }
}

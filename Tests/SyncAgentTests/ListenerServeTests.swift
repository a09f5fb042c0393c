import AsyncHTTPClient
import Foundation
import NIOSSL
import Store
import SyncAgent
import XCTest

/// `syncd serve` and `syncd user` as real processes.
final class ListenerServeTests: XCTestCase {
    func testServePrintsItsURLAnswersAndStopsOnSIGTERM() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let passwordFile = directory.path + "/password.txt"
        try "root pw\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let add = try run(["user", "add", "root", "--admin", "--password-file", passwordFile, "--data", directory.path])
        XCTAssertEqual(add.output, "user root saved (roles: _admin)\n")
        let serve = try await ServeProcess.start(["--data", directory.path, "--port", "0"])
        XCTAssertTrue(serve.url.hasPrefix("http://127.0.0.1:"), serve.url)
        let second = try await ServeProcess.startFailing(["--data", directory.path, "--port", "0"])
        XCTAssertNotEqual(second.status, 0)
        XCTAssertTrue(second.output.contains("another syncd (pid "), second.output)
        let welcome = try await HTTP.json(.GET, serve.url + "/")
        XCTAssertEqual(welcome.status, 200)
        XCTAssertEqual(welcome.json["couchdb"], "Welcome")
        let uuid = try String(contentsOfFile: directory.path + "/node-uuid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(welcome.json["uuid"]?.stringValue, uuid)
        try await assertEqual(try await HTTP.json(.PUT, serve.url + "/db").status, 401)
        let root = HTTP.basic("root", "root pw")
        try await assertEqual(try await HTTP.json(.PUT, serve.url + "/db", headers: [root]).status, 201)
        try await assertEqual(try await HTTP.json(.PUT, serve.url + "/db/a", ["x": 1], headers: [root]).status, 201)
        let status = await serve.stop()
        XCTAssertEqual(status, 0)
        // Closed before the directory goes: an open database could still write there as it is removed.
        let catalog = try Catalog(directory: directory.path)
        defer { catalog.close() }
        XCTAssertNotNil(try catalog.database("db").document(id: "a"))
    }

    /// Started with umask 000, syncd still creates nothing open to all: it runs with 077, so its
    /// control socket is bound 0600 and then opened to the group (0660), never wider.
    func testTheControlSocketIsNeverOpenToAllWhateverTheUmask() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let previous = umask(0)
        let server: ServeProcess
        do {
            server = try await ServeProcess.start(["--port", "0", "--data", directory.path])
            umask(previous)
        } catch {
            umask(previous)
            throw error
        }
        let status = try String(contentsOfFile: "/proc/\(server.process.processIdentifier)/status", encoding: .utf8)
        let mask = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }.map { $0.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces) }
        let socket = try FileManager.default.attributesOfItem(atPath: directory.path + "/control.sock")[.posixPermissions] as? Int
        _ = await server.stop()
        XCTAssertEqual(mask, "0077")
        XCTAssertEqual(socket, 0o660)
    }

    func testServeWithUsersAndTLS() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let passwordFile = directory.path + "/password.txt"
        try "pa:ss word\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let add = try run(["user", "add", "frank", "--password-file", passwordFile, "--data", directory.path])
        XCTAssertEqual(add.status, 0, add.output)
        let viaStdin = try run(["user", "add", "gina", "--data", directory.path], input: "from stdin\n")
        XCTAssertEqual(viaStdin.status, 0, viaStdin.output)
        XCTAssertEqual(try run(["user", "list", "--data", directory.path]).output, "frank\ngina\n")
        XCTAssertFalse(try String(contentsOfFile: directory.path + "/users.json", encoding: .utf8).contains("pa:ss"))

        let serve = try await ServeProcess.start(["--data", directory.path, "--port", "0", "--tls"])
        defer { Task { await serve.stop() } }
        XCTAssertTrue(serve.url.hasPrefix("https://"), serve.url)
        let identity = try NodeIdentity.loadOrCreate(in: directory.path)
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = try TLSSettings.client(trusting: NIOSSLCertificate(bytes: identity.certificateDER, format: .der))
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let anonymous = try await HTTP.json(.GET, serve.url + "/_session", client: client)
        let frank = try await HTTP.json(.GET, serve.url + "/_session", headers: [HTTP.basic("frank", "pa:ss word")], client: client)
        let gina = try await HTTP.json(.GET, serve.url + "/_uuids", headers: [HTTP.basic("gina", "from stdin")], client: client)
        let ginaAllDbs = try await HTTP.json(.GET, serve.url + "/_all_dbs", headers: [HTTP.basic("gina", "from stdin")], client: client)
        let nobody = try await HTTP.json(.GET, serve.url + "/_uuids", client: client)
        try await client.shutdown()
        XCTAssertEqual(anonymous.json["userCtx"]?["name"], .null)
        XCTAssertEqual(frank.json["userCtx"]?["name"], "frank")
        XCTAssertEqual(gina.status, 200)
        XCTAssertEqual(ginaAllDbs.status, 403, "only server admins list databases")
        XCTAssertEqual(nobody.status, 401)

        XCTAssertEqual(try run(["user", "remove", "frank", "--data", directory.path]).status, 0)
        XCTAssertNotEqual(try run(["user", "remove", "frank", "--data", directory.path]).status, 0)
        try await assertEqual(await serve.stop(signal: SIGINT), 0)
    }

    func testServeTakesItsSizeLimits() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let passwordFile = directory.path + "/password.txt"
        try "root pw\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        XCTAssertEqual(try run(["user", "add", "root", "--admin", "--password-file", passwordFile, "--data", directory.path]).status, 0)
        let refused = try await ServeProcess.startFailing(["--data", directory.path, "--port", "0", "--max-document-size", "0"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.output.contains("size limits must be positive"), refused.output)

        let serve = try await ServeProcess.start(["--data", directory.path, "--port", "0",
                                                  "--max-document-size", "1000", "--max-attachment-size", "100"])
        let root = HTTP.basic("root", "root pw")
        try await assertEqual(try await HTTP.json(.PUT, serve.url + "/db", headers: [root]).status, 201)
        let big = try await HTTP.json(.PUT, serve.url + "/db/big", ["t": .string(String(repeating: "x", count: 1000))], headers: [root])
        XCTAssertEqual(big.status, 413)
        XCTAssertEqual(big.json, ["error": "document_too_large", "reason": "big"])
        let attachment = try await HTTP.request(.PUT, serve.url + "/db/doc/a.bin", body: [UInt8](repeating: 1, count: 101), headers: [root])
        XCTAssertEqual(attachment.status, 413, attachment.text)
        XCTAssertEqual(attachment.json, ["error": "attachment_too_large", "reason": "a.bin"])
        try await assertEqual(try await HTTP.json(.PUT, serve.url + "/db/small", ["t": "fits"], headers: [root]).status, 201)
        try await assertEqual(await serve.stop(), 0)
    }

    private func run(_ arguments: [String], input: String? = nil) throws -> (status: Int32, output: String) {
        let result = try SyncdCommand.run(arguments, input: input)
        return (result.status, result.output)
    }
}

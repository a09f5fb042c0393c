import Foundation
import Store
@testable import SyncAgent
import TestBed
import Testing

/// The `syncd` command line: what it creates, warns about and prints.
@Suite struct CommandTests {
    @Test func userAddCreatesTheDataDirectory() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-user-add")
        defer { directory.remove() }
        let passwordFile = directory.path + "/password"
        try "secret\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let data = directory.path + "/new/data"
        let add = try SyncdRun(["user", "add", "alice", "--password-file", passwordFile, "--data", data], in: directory.path)
        #expect(await add.finish() == 0, "\(add.errors)")
        #expect(try await UserStore(directory: data, iterations: 1).verify(name: "alice", password: "secret") != nil)
        for folder in [directory.path + "/new", data] {
            let mode = try FileManager.default.attributesOfItem(atPath: folder)[.posixPermissions] as? Int
            #expect(mode == 0o700, "\(folder) is private to its user")
        }
        // A file written on Windows: the password is the first line, without its CRLF.
        try "secret\r\nnot this\r\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let crlf = try SyncdRun(["user", "add", "bob", "--password-file", passwordFile, "--data", data], in: directory.path)
        #expect(await crlf.finish() == 0, "\(crlf.errors)")
        #expect(try await UserStore(directory: data, iterations: 1).verify(name: "bob", password: "secret") != nil)
    }

    /// Bare `syncd` on a machine where nothing ran yet: a short usage naming the
    /// commands a new user needs, and nothing created; nor by `status`, `id` or `peers`.
    @Test func commandsThatOnlyReadCreateNothingInAnEmptyHome() throws {
        let home = try TemporaryDirectory(prefix: "syncd-empty-home")
        defer { home.remove() }
        let environment = ["HOME": home.path, "XDG_DATA_HOME": "", "SYNCD_DATA": ""]
        let syncd = try TestBed.syncdExecutable
        let bare = try runCommand([syncd], environment: environment, check: false)
        #expect(bare.status == 0, "\(bare.errorOutput)")
        #expect(bare.output.contains("No agent is running for \(home.path)/.local/share/syncd."), "\(bare.output)")
        for command in ["agent", "pair URL", "status"] { #expect(bare.output.contains("syncd \(command) "), "\(bare.output)") }
        #expect(try runCommand([syncd, "status"], environment: environment, check: false).status == 3)
        let id = try runCommand([syncd, "id"], environment: environment, check: false)
        #expect(id.status == 1 && id.errorOutput.contains("no syncd node in"), "\(id.errorOutput)")
        #expect(try runCommand([syncd, "peers"], environment: environment, check: false).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: home.path).isEmpty)
    }

    /// The default data directory follows `$XDG_DATA_HOME`, then `$HOME`, as other XDG tools do.
    @Test func theDefaultDataDirectoryFollowsXDGThenHome() throws {
        let home = try TemporaryDirectory(prefix: "syncd-home")
        defer { home.remove() }
        let syncd = try TestBed.syncdExecutable
        let inHome = try runCommand([syncd, "info"], environment: ["HOME": home.path, "XDG_DATA_HOME": "", "SYNCD_DATA": ""])
        #expect(inHome.output.contains("data directory: \(home.path)/.local/share/syncd\n"), "\(inHome.output)")
        #expect(FileManager.default.fileExists(atPath: home.path + "/.local/share/syncd/syncd.sqlite"))
        let xdg = home.path + "/xdg"
        let inXDG = try runCommand([syncd, "info"], environment: ["HOME": home.path, "XDG_DATA_HOME": xdg, "SYNCD_DATA": ""])
        #expect(inXDG.output.contains("data directory: \(xdg)/syncd\n"), "\(inXDG.output)")
    }

    /// A data directory so deep that its control socket's path cannot be bound: one line saying
    /// so and what to do, not NIO's error name.
    @Test func aControlSocketPathTooLongIsExplained() throws {
        let directory = try TemporaryDirectory(prefix: "syncd-deep")
        defer { directory.remove() }
        let data = directory.path + "/" + String(repeating: "d", count: 120)
        let agent = try runCommand([try TestBed.syncdExecutable, "agent", "--data", data], check: false)
        #expect(agent.status != 0)
        let socket = data + "/control.sock"
        #expect(agent.errorOutput.hasSuffix("Error: the control socket path \(socket) is \(socket.utf8.count) bytes long; a Unix socket's "
            + "may have 107 at most: use a shorter data directory, or --control-socket PATH\n"), "\(agent.errorOutput)")
    }

    @Test func servingWithoutUsersOrPeersWarns() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-no-users")
        defer { directory.remove() }
        let arguments = ["serve", "--port", "0", "--data", directory.path + "/data"]
        let alone = try SyncdRun(arguments, in: directory.path)
        #expect(await alone.waitForOutput("listening on "))
        #expect(await alone.stop() == 0)
        #expect(alone.errors.contains("warning: no users and no paired peers"), "\(alone.errors)")

        try UserStore(directory: directory.path + "/data", iterations: 1).setPassword("pw", for: "bob")
        let withUser = try SyncdRun(arguments, in: directory.path)
        #expect(await withUser.waitForOutput("listening on "))
        #expect(await withUser.stop() == 0)
        #expect(!withUser.errors.contains("warning"), "\(withUser.errors)")
    }

    /// In a network namespace of its own, with loopback and one veth address,
    /// `--host 0.0.0.0` prints exactly those two addresses.
    @Test func aWildcardHostPrintsTheInterfacesAddresses() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-wildcard")
        defer { directory.remove() }
        let script = """
            ip link set lo up && ip link add v0 type veth peer name v1 && ip addr add 10.123.0.1/24 dev v0 && \
            ip link set v0 up && exec "$0" serve --host 0.0.0.0 --port 0 --data "$1"
            """
        let serve = try SyncdRun(["-n", "sh", "-c", script, ServeProcess.executable, directory.path + "/data"],
                                 executable: "/usr/bin/unshare", in: directory.path)
        #expect(await serve.waitForOutput("10.123.0.1"), "\(serve.output) \(serve.errors)")
        #expect(await serve.stop() == 0)
        let urls = serve.output.split(separator: "\n").filter { $0.hasPrefix("listening on ") }.map { $0.dropFirst("listening on ".count) }
        let port = try #require(urls.first?.split(separator: ":").last)
        #expect(urls == ["http://127.0.0.1:\(port)", "http://10.123.0.1:\(port)"], "\(serve.output)")
    }

    @Test func aWrongPeerUUIDIsRefusedWithAClearError() async throws {
        let server = try await TestListener.start()
        let directory = try TemporaryDirectory(prefix: "syncd-peer-uuid")
        defer { directory.remove() }
        do {
            _ = try server.catalog.create("db")
            let wrong = try SyncdRun(["replicate", server.url + "/db", "copy", "--peer-uuid", "0123456789abcdef0123456789abcdef",
                                      "--data", directory.path + "/data"], in: directory.path)
            #expect(await wrong.finish() == 1)
            #expect(wrong.errors.contains("wrong_peer"), "\(wrong.errors)")
            #expect(wrong.errors.contains("not the peer UUID 0123456789abcdef0123456789abcdef"), "\(wrong.errors)")

            let right = try SyncdRun(["replicate", server.url + "/db", "copy", "--peer-uuid", server.listener.node.identity.uuid,
                                      "--data", directory.path + "/data"], in: directory.path)
            #expect(await right.finish() == 0, "\(right.errors)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}

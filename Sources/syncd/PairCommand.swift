import ArgumentParser
import Foundation
import JSON
import Logging
import QRCode
import ServiceLifecycle
import UnixSignals
import Store
import SyncAgent

/// Pairs this node with another: invites (prints a QR code of this node's
/// endpoint URL and waits for the other node to join) or joins (with the URL
/// another node printed).
struct PairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair with another node: print an invitation as a QR code, or join with one.",
        discussion: """
            Without URL: makes a one-time invitation to the databases named by --database, prints a QR \
            code of this node's endpoint URL (with its ID and the invitation's secret) and the URL as \
            text, and waits until another node joins with it or it expires. When no other syncd serves \
            the data directory, it serves it over HTTPS on --port while it waits.

            With URL (or --image of a photographed or captured QR code): joins that node. The node's \
            certificate must have the ID the URL carries, or nothing is sent.
            """
    )

    @OptionGroup var data: DataOptions

    @Argument(help: "An invitation URL printed by `syncd pair` on the other node.")
    var url: String?

    @Option(help: "Join with the invitation URL in this image of its QR code (PNG, JPEG or PGM).")
    var image: String?

    @Option(name: .customLong("database"), help: "A database to share (repeatable; default: syncd).")
    var databases: [String] = []

    @Option(help: "How long the invitation stays valid: 90s, 10m, 1h.")
    var expires = "10m"

    @Option(help: "The address to put in the URL (default: this machine's first LAN address).")
    var address: String?

    @Option(help: "The address to listen on while waiting, when no other syncd serves the data directory.")
    var host = "0.0.0.0"

    @Option(help: "The listener's port (when inviting without a running listener; told to the other node when joining).")
    var port = AgentConfiguration.defaultPort

    @Option(help: "The name this node gives itself (default: the host name).")
    var name: String?

    @Flag(help: "Print the invitation as JSON, without the QR code.")
    var json = false

    @Flag(help: "Cancel every open invitation of this node.")
    var cancel = false

    func validate() throws {
        guard Self.duration(expires) != nil else { throw ValidationError("--expires must be like 90s, 10m or 1h") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        for database in databases where !Catalog.isValidName(database) {
            throw ValidationError("invalid database name \(database)")
        }
        if url != nil && image != nil { throw ValidationError("give either URL or --image, not both") }
    }

    func run() async throws {
        if cancel {
            let count = try InvitationStore(directory: data.path).cancel()
            print("cancelled \(count) invitation\(count == 1 ? "" : "s")")
            return
        }
        if let image {
            try await join(try QRImage.decode(path: image))
        } else if let url {
            try await join(url)
        } else {
            try await invite()
        }
    }

    // MARK: Joining

    private func join(_ text: String) async throws {
        let invitation = try InvitationURL(text)
        let identity = try NodeIdentity.loadOrCreate(in: data.path)
        let client = PairingClient(identity: identity, name: name ?? NodeName.of(directory: data.path),
                                   port: ListenerRecord.current(in: data.path)?.port ?? port, peers: PeerStore(directory: data.path))
        let peer = try await client.join(invitation)
        print("paired with \(peer.name) (\(peer.id)), sharing \(peer.databases.joined(separator: ", "))")
    }

    // MARK: Inviting

    private func invite() async throws {
        let shared = databases.isEmpty ? ["syncd"] : databases
        var logger = Logger(label: "syncd")
        logger.logLevel = .notice
        if ListenerRecord.current(in: data.path) != nil || DataDirectoryLock.isHeld(data.path) {
            guard let record = ListenerRecord.current(in: data.path), record.tls else {
                throw ValidationError("the syncd serving \(data.path) does not serve HTTPS; pairing needs it (serve --tls)")
            }
            try await invite(shared, port: record.port, identity: try NodeIdentity.loadOrCreate(in: data.path))
            return
        }
        var configuration = ListenerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.tls = true
        let node = try ServedNode(directory: data.path, configuration: configuration, name: name ?? NodeName.of(directory: data.path), logger: logger)
        defer { node.close() }
        for database in shared { _ = try node.listener.catalog.openOrCreate(database) }
        let (bound, boundContinuation) = AsyncStream.makeStream(of: Int.self)
        let server = try node.service { record in
            boundContinuation.yield(record.port)
            boundContinuation.finish()
        }
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: server)], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            guard let port = await bound.first(where: { _ in true }) else { throw ExitCode.failure }
            do {
                try await invite(shared, port: port, identity: node.listener.identity)
            } catch {
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    /// Makes the invitation, prints it, and waits for it to be used.
    private func invite(_ shared: [String], port: Int, identity: NodeIdentity) async throws {
        guard let host = address ?? LocalAddresses.lan().first else {
            throw ValidationError("this machine has no LAN address to put in the URL; give one with --address")
        }
        let store = InvitationStore(directory: data.path)
        let (invitation, secret) = try store.create(databases: shared, lifetime: Self.duration(expires)!)
        let url = InvitationURL(host: host, port: port, databases: shared, id: identity.id, secret: secret)
        if json {
            let object: JSON = [
                "url": .string(url.description), "uuid": .string(identity.uuid), "id": .string(identity.id.description),
                "databases": .array(shared.map { .string($0) }), "expires": .string(ISO8601DateFormatter().string(from: invitation.expires)),
                "handle": .string(invitation.handle),
            ]
            print(String(decoding: object.serializedBytes(), as: UTF8.self))
        } else {
            let code = try QRCode(url.codeText)
            print(code.terminalText(style: isatty(STDOUT_FILENO) != 0 ? .ansi : .plain))
            print(url.description)
            print("""
                node \(name ?? NodeName.of(directory: data.path)), ID \(identity.id)
                Scan the code on the other machine, or run there: syncd pair '\(url)'
                This invitation shares \(shared.joined(separator: ", ")), works once, and expires in \(expires).
                """)
        }
        fflush(nil)
        // Ctrl-C, SIGTERM or a closed terminal (SIGHUP) cancels the invitation before the command ends
        // (trapped before the wait begins, so none can end the process with the invitation still valid).
        let interrupts = await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup)
        let interrupted = Task {
            for await _ in interrupts {
                _ = try? store.cancel(handle: invitation.handle)
                FileHandle.standardError.write(Data("invitation cancelled\n".utf8))
                Foundation.exit(130)
            }
        }
        defer { interrupted.cancel() }
        let outcome = await InvitationWatch.wait(for: invitation.handle, in: store)
        switch outcome {
        case .spent(let uuid):
            let peer = try PeerStore(directory: data.path).all().first { $0.uuid == uuid }
            print("paired with \(peer?.name ?? uuid) (\(peer.map { $0.id.description } ?? uuid))")
        case .expired:
            FileHandle.standardError.write(Data("error: the invitation expired; nobody joined\n".utf8))
            throw ExitCode(1)
        case .cancelled:
            FileHandle.standardError.write(Data("error: the invitation was cancelled\n".utf8))
            throw ExitCode(1)
        }
    }

    /// `90s`, `10m`, `1h` (or plain seconds) as a duration; `nil` if not one.
    static func duration(_ text: String) -> Duration? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600]
        let unit = text.last.flatMap { units[$0] }
        guard let value = Int64(unit == nil ? text : String(text.dropLast())), value > 0, value <= 7 * 86_400 else { return nil }
        return .seconds(value * (unit ?? 1))
    }
}

/// The invitation URL in an image of its QR code.
enum QRImage {
    static func decode(path: String) throws -> String {
        let texts = try QRCode.decode(imageAt: path)
        guard let text = texts.first(where: { $0.lowercased().hasPrefix("https://") }) ?? texts.first else {
            throw ValidationError("no QR code found in \(path)")
        }
        return text
    }
}

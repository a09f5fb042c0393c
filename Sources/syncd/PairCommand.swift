import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
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
    @OptionGroup var control: ControlOptions

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

    @Option(help: "The listener's port (when inviting without a running agent; told to the other node when joining; default: \(AgentConfiguration.defaultPort)).")
    var port: Int?

    @Option(help: "The name this node gives itself, when no agent runs (the agent's is [node] name in its syncd.toml; default: the name last used, else the host name).")
    var name: String?

    @Flag(help: "Print the invitation as JSON, without the QR code.")
    var json = false

    @Flag(help: "Cancel every open invitation of this node.")
    var cancel = false

    @Flag(help: "Keep this pair private: neither node introduces the other to the rest of its group, nor is introduced to it.")
    var noIntroduce = false

    func validate() throws {
        guard Self.duration(expires) != nil else { throw ValidationError("--expires must be like 90s, 10m or 1h") }
        guard (0...65535).contains(port ?? 0) else { throw ValidationError("--port must be between 0 and 65535") }
        for database in databases where !Catalog.isValidName(database) {
            throw ValidationError("invalid database name \(database)")
        }
        if url != nil && image != nil { throw ValidationError("give either URL or --image, not both") }
    }

    func run() async throws {
        try await withNode(data, control, name: name) { access in
            if case .agent = access, name != nil {
                throw NodeControlError.invalid("--name is for a node no agent runs; the agent's name is [node] name in its syncd.toml")
            }
            if cancel {
                let count = try await access.control.cancelInvitations(handle: nil)
                print("cancelled \(count) invitation\(count == 1 ? "" : "s")")
            } else if let image {
                try await join(try QRImage.decode(path: image), access)
            } else if let url {
                try await join(url, access)
            } else if case .claimed(let node) = access {
                try await serving(node) { try await invite(node) }
            } else {
                try await invite(access.control)
            }
        }
    }

    // MARK: Joining

    private func join(_ url: String, _ access: NodeAccess) async throws {
        let peer = try await access.control.join(url, port: port, introduce: !noIntroduce)
        print("paired with \(peer.name) (\(peer.id)), sharing \(peer.databases.joined(separator: ", "))")
        Self.printRenamed(peer)
        if let name = peer.knownAs { print("another peer there had this node's name: \(peer.name) knows this node as \(name)") }
        if case .claimed = access { print("no agent runs here: start one (syncd agent, or systemctl start syncd) to sync") }
    }

    /// Says so when `peer` is recorded here under another name than the one it gave (another peer had it).
    private static func printRenamed(_ peer: PairedPeer) {
        if let given = peer.calledItself { print("another peer here is named \(given): this one is known here as \(peer.name)") }
    }

    // MARK: Inviting

    /// Runs `body` while `node` is served over HTTPS on --host and --port (and on the
    /// control socket, so other commands reach it meanwhile).
    private func serving(_ node: Node, _ body: () async throws -> Void) async throws {
        var logger = Logger(label: "syncd")
        logger.logLevel = .notice
        var configuration = ListenerConfiguration()
        configuration.host = host
        configuration.port = port ?? AgentConfiguration.defaultPort
        configuration.tls = true
        let listener = Listener(node: node, configuration: configuration, logger: logger)
        let (bound, boundContinuation) = AsyncStream.makeStream(of: Void.self)
        let server = try listener.recordedService { _ in boundContinuation.finish() }
        let socket = control.path(data: data)
        let services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: server), .init(service: try listener.controlService(path: socket))]
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: services, logger: logger))
        defer { unlink(socket) }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            for await _ in bound {}
            do {
                try await body()
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
    private func invite(_ node: any NodeControl) async throws {
        let shared = databases.isEmpty ? [InvitationURL.defaultDatabase] : databases
        let ticket = try await node.invite(databases: shared, lifetime: Self.duration(expires)!, introduce: !noIntroduce)
        let url = try ticket.url(host: address)
        if json {
            let object: JSON = [
                "url": .string(url.description), "uuid": .string(ticket.uuid), "id": .string(ticket.id.description),
                "databases": .array(shared.map { .string($0) }), "expires": .string(ticket.expires.formatted(.iso8601)),
                "handle": .string(ticket.handle),
            ]
            print(String(decoding: object.serializedBytes(), as: UTF8.self))
        } else {
            print(try InvitationText.text(url, node: ticket.name, expiresIn: expires,
                                          style: isatty(STDOUT_FILENO) != 0 ? .ansi : .plain), terminator: "")
        }
        fflush(nil)
        // Ctrl-C, SIGTERM or a closed terminal (SIGHUP) cancels the invitation before the command ends
        // (trapped before the wait begins, so none can end the process with the invitation still valid).
        let interrupts = await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup)
        let interrupted = Task {
            for await _ in interrupts {
                _ = try? await node.cancelInvitations(handle: ticket.handle)
                StandardStream.error.write("invitation cancelled\n")
                Glibc.exit(130)
            }
        }
        defer { interrupted.cancel() }
        switch try await node.waitForInvitation(ticket.handle, atMost: nil) {
        case .spent(let uuid):
            let peer = try await node.peers().first { $0.uuid == uuid }
            print("paired with \(peer?.name ?? uuid) (\(peer.map { $0.id.description } ?? uuid))")
            if let peer { Self.printRenamed(peer) }
        case .expired:
            throw NodeControlError.invalid("the invitation expired; nobody joined")
        case .cancelled, .open:
            throw NodeControlError.invalid("the invitation was cancelled")
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
            throw NodeControlError.invalid("no QR code found in \(path)")
        }
        return text
    }
}

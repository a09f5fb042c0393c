import ArgumentParser
import Discovery
import FoundationEssentials
import SyncAgent

/// Lists the syncd peers on the LAN, or follows them with `--watch`.
struct BrowseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browse",
        abstract: "Show the syncd peers seen on the LAN (Avahi DNS-SD).",
        discussion: "Exits with status 69 when avahi-daemon or the D-Bus system bus cannot be reached."
    )

    @Option(help: "The DNS-SD service type to browse.")
    var type = ServiceType.syncd.name

    @Flag(help: "Keep running and print peers as they appear, change and go.")
    var watch = false

    @Option(help: "Seconds to listen before printing the peers (without --watch).")
    var wait = 2.5

    @Option(name: .customLong("exclude-uuid"), help: "Ignore the node with this UUID (e.g. this machine's own).")
    var excludeUUID: String?

    @Flag(help: "Print JSON, one object per line.")
    var json = false

    func run() async throws {
        let browser = try Browser(type: try ServiceType(type))
        let output = EventPrinter(json: json)
        if watch {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await status in browser.statusUpdates() { output.status(status) } }
                group.addTask { for await event in browser.peerEvents(excluding: excludeUUID) { output.peerEvent(event) } }
            }
            return
        }
        if case .unavailable(let why) = browser.status {
            output.status(.unavailable(why))
            throw ExitCode(69)
        }
        try await Task.sleep(for: .seconds(wait))
        if case .unavailable(let why) = browser.status {
            output.status(.unavailable(why))
            throw ExitCode(69)
        }
        let peers = browser.peers(excluding: excludeUUID)
        for peer in peers { output.peer(peer) }
        if peers.isEmpty && !json { print("no peers of type \(type)") }
    }
}

/// Prints discovery events for people, or as JSON lines for scripts and tests; each line is
/// flushed at once so a reader sees events as they happen.
struct EventPrinter: Sendable {
    let json: Bool

    /// One JSON line; `time` is the wall clock in seconds, comparable across processes.
    private struct Line: Encodable {
        var event: String
        var time = Date().timeIntervalSince1970
        var name: String?
        var from: String?
        var to: String?
        var reason: String?
        var message: String?
        var peer: Peer?
    }

    func status(_ status: DiscoveryStatus) {
        switch status {
        case .available:
            emit(Line(event: "available"), text: "discovery available")
        case .unavailable(let why):
            emit(Line(event: "unavailable", reason: why.reason.rawValue, message: why.message), text: "discovery unavailable: \(why)", toError: true)
        }
    }

    func peerEvent(_ event: PeerEvent) {
        switch event {
        case .appeared(let peer): emit(Line(event: "appeared", peer: peer), text: "+ " + summary(peer))
        case .changed(let peer): emit(Line(event: "changed", peer: peer), text: "~ " + summary(peer))
        case .gone(let peer): emit(Line(event: "gone", peer: peer), text: "- " + summary(peer))
        }
    }

    func peer(_ peer: Peer) {
        let txt = peer.txt.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        // The node ID as `syncd id`, `status` and pairing show it, from the fingerprint the TXT carries.
        let id = peer.txt[TXTKey.fingerprint].flatMap(NodeID.init).map { "\n  id         \($0)" } ?? ""
        emit(Line(event: "peer", peer: peer), text: """
            \(peer.name)
              uuid       \(peer.uuid)\(id)
              host       \(peer.hostName)
              addresses  \(peer.addresses.map(\.host).joined(separator: ", "))
              port       \(peer.port)
              txt        \(txt)
            """)
    }

    func advertiserEvent(_ event: AdvertiserEvent) {
        let line: Line = switch event {
        case .registering(let name): Line(event: "registering", name: name)
        case .established(let name): Line(event: "established", name: name)
        case .renamed(let from, let to): Line(event: "renamed", from: from, to: to)
        case .withdrawn: Line(event: "withdrawn")
        case .failed(let message): Line(event: "failed", message: message)
        }
        emit(line, text: event.description)
    }

    private func summary(_ peer: Peer) -> String {
        "\(peer.name) uuid=\(peer.uuid) \(peer.addresses.map(\.host).joined(separator: ",")) port \(peer.port)"
    }

    private func emit(_ line: Line, text: String, toError: Bool = false) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            guard let data = try? encoder.encode(line) else { return }
            StandardStream.output.write(Array(data) + [UInt8(ascii: "\n")])
        } else {
            (toError ? StandardStream.error : StandardStream.output).write(text + "\n")
        }
    }
}

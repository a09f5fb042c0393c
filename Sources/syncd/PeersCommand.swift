import ArgumentParser
import FoundationEssentials
import SyncAgent

/// Lists and revokes paired peers.
struct PeersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "List the group's members (the peers paired here and those they introduced), or remove one.",
        subcommands: [List.self, Remove.self],
        defaultSubcommand: List.self
    )

    /// `syncd peers [list]`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the group's members.")

        @OptionGroup var data: DataOptions
        @OptionGroup var control: ControlOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            let peers = try await readNode(data, control, nothing: []) { try await $0.peers() }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                encoder.dateEncodingStrategy = .iso8601
                print(String(decoding: try encoder.encode(peers), as: UTF8.self))
                return
            }
            guard !peers.isEmpty else {
                print("no paired peers (pair with `syncd pair`)")
                return
            }
            let names = Dictionary(peers.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
            for peer in peers {
                let how = peer.isIntroduced ? "introduced by " + peer.introducedBy.map { names[$0] ?? $0.short }.joined(separator: ", ")
                    : peer.introduce ? "paired directly" : "paired directly, private (--no-introduce)"
                print("""
                    \(peer.name)
                      ID          \(peer.id)
                      UUID        \(peer.uuid)
                      member      \(how)
                      databases   \(peer.databases.joined(separator: ", "))
                      address     \(peer.lastAddress ?? "unknown")
                      paired      \(peer.pairedAt.formatted(.iso8601))
                      last seen   \(peer.lastSeen.map { $0.formatted(.iso8601) } ?? "never")
                    """)
            }
        }
    }

    /// `syncd peers remove ID`.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a member: it is refused from now on and its connections are closed; a peer paired here leaves every member it was introduced to through this node.",
            discussion: """
                A removed node is not taken from another member's introduction again here; only pairing \
                with it again brings it back. Members that other nodes paired with directly stay members there.
                """)

        @OptionGroup var data: DataOptions
        @OptionGroup var control: ControlOptions

        @Argument(help: "The peer's ID (or its first characters), UUID or name.")
        var peer: String

        func run() async throws {
            let target = try await withNode(data, control) { try await $0.control.removePeer(peer) }
            print("removed \(target.name) (\(target.id))")
            if target.isIntroduced {
                print("it was introduced to this node: it stays in the group of the nodes that paired with it, and is not taken back here")
            }
        }
    }
}

import ArgumentParser
import Foundation
import SyncAgent

/// Lists and revokes paired peers.
struct PeersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "List the paired peers, or revoke one.",
        subcommands: [List.self, Remove.self],
        defaultSubcommand: List.self
    )

    /// `syncd peers [list]`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the paired peers.")

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
            let dates = ISO8601DateFormatter()
            for peer in peers {
                print("""
                    \(peer.name)
                      ID          \(peer.id)
                      UUID        \(peer.uuid)
                      databases   \(peer.databases.joined(separator: ", "))
                      address     \(peer.lastAddress ?? "unknown")
                      paired      \(dates.string(from: peer.pairedAt))
                      last seen   \(peer.lastSeen.map(dates.string(from:)) ?? "never")
                    """)
            }
        }
    }

    /// `syncd peers remove ID`.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a pairing: the peer is refused from now on and its connections are closed.")

        @OptionGroup var data: DataOptions
        @OptionGroup var control: ControlOptions

        @Argument(help: "The peer's ID (or its first characters), UUID or name.")
        var peer: String

        func run() async throws {
            let target = try await withNode(data, control) { try await $0.control.removePeer(peer) }
            print("removed \(target.name) (\(target.id))")
        }
    }
}

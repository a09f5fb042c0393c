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

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            let peers = try PeerStore(directory: data.path).all()
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

        @Argument(help: "The peer's ID (or its first characters), UUID or name.")
        var peer: String

        func run() async throws {
            let store = PeerStore(directory: data.path)
            let found = try store.find(peer)
            guard found.count == 1, let target = found.first else {
                let why = found.isEmpty ? "no paired peer matches \(peer)" : "\(peer) matches \(found.count) peers; give more of the ID"
                FileHandle.standardError.write(Data("error: \(why)\n".utf8))
                throw ExitCode(1)
            }
            try store.remove(id: target.id)
            print("removed \(target.name) (\(target.id))")
        }
    }
}

import Foundation
import Testing

@testable import SyncAgent

/// `syncd status` as text: 80 columns whatever the names, nothing cut, peers that
/// are connected said to be.
struct StatusTextTests {
    /// Ten peers with long names and IPv6 addresses, ten databases, a configured remote.
    static func crowded(now: Date) -> AgentStatus {
        let id = "ABCDEFGH-IJKLMNOP-QRSTUVWX-YZ234567-ABCDEFGH-IJKLMNOP-QRSTUVWX-YZ2"
        let names = (0..<10).map { "a-rather-long-machine-name-number-\($0)" }
        let peers = names.enumerated().map { index, name in
            AgentStatus.Peer(name: name, id: id, uuid: String(repeating: "\(index)", count: 32), pairedAt: now,
                             state: index % 3 == 0 ? "offline" : "online",
                             address: index % 3 == 0 ? nil : "[fd00:1234:5678:9abc:def0:1234:5678:\(index)]:6984",
                             reason: index % 3 == 0 ? "no address known (not seen on the LAN, none configured)" : nil,
                             lastSeen: now.addingTimeInterval(-24), databases: ["notes"])
        }
        let databases = (0..<10).map { "database-with-a-long-name-\($0)" }
        var replications = zip(names, databases).map { name, database in
            AgentStatus.Replication(database: database, with: name, direction: "pull", state: "idle", docsRead: 123_456,
                                    docsWritten: 123_456, docWriteFailures: 0, changesPending: 0, checkpointedSeq: "9", lastError: nil)
        }
        replications.append(AgentStatus.Replication(
            database: "notes", with: "https://couch.example.org:6984/notes-archive", direction: "push", state: "idle",
            docsRead: 1, docsWritten: 1, docWriteFailures: 0, changesPending: nil, checkpointedSeq: nil, lastError: nil))
        return AgentStatus(
            node: .init(name: "kitchen", uuid: String(repeating: "f", count: 32), id: id,
                        urls: ["https://[fd00:1234:5678:9abc:def0:1234:5678:9abc]:6984"], version: "0.1.0",
                        started: now.addingTimeInterval(-3600), dataDirectory: "/var/lib/syncd"),
            discovery: .init(state: "running", reason: nil), peers: peers, replications: replications,
            databases: databases.map { .init(name: $0, docCount: 1_000_000, docDelCount: 12, updateSeq: "1000012",
                                             sizeOnDisk: 3 << 30, diskFree: 100 << 30) })
    }

    @Test func everyLineFitsEightyColumnsAndNothingIsCut() {
        let now = Date()
        let status = Self.crowded(now: now)
        let text = StatusText(status, detailed: false, now: now).text
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for line in lines { #expect(line.count <= 80, "too wide: \(line)") }
        // Every name, address and database whole, on one line.
        for peer in status.peers {
            #expect(lines.contains { $0.contains(peer.name) }, "\(peer.name) cut: \(text)")
            if let address = peer.address { #expect(lines.contains { $0.contains(address) }, "\(address) cut: \(text)") }
        }
        for database in status.databases { #expect(lines.contains { $0.hasPrefix("  " + database.name + " ") }, "\(text)") }
        // A remote by host:port/database.
        #expect(lines.contains { $0.hasPrefix("  notes ") && $0.hasSuffix("-> couch.example.org:6984/notes-archive") }, "\(text)")
    }

    @Test func aConnectedPeerIsShownConnectedNotLastSeen() {
        let now = Date()
        let text = StatusText(Self.crowded(now: now), detailed: false, now: now).text
        #expect(text.contains("\n    online [fd00:1234:5678:9abc:def0:1234:5678:1]:6984 connected\n"), "\(text)")
        #expect(text.contains("\n    offline seen 24s ago\n"), "\(text)")
    }

    /// Short names keep one line per peer and per replication, in aligned columns.
    @Test func shortNamesKeepOneLineEach() {
        let now = Date()
        var status = Self.crowded(now: now)
        status.peers = Array(status.peers.prefix(2))
        status.peers[0].name = "garage"
        status.peers[1].name = "office"
        status.peers[1].address = "10.0.7.2:6984"
        status.replications = [status.replications[1], status.replications[10]]
        status.replications[0].database = "notes"
        status.replications[0].with = "office"
        let lines = StatusText(status, detailed: false, now: now).text.split(separator: "\n")
        #expect(lines.contains("  garage ABCDEFGH- offline               seen 24s ago"), "\(lines)")
        #expect(lines.contains("  office ABCDEFGH- online  10.0.7.2:6984 connected"), "\(lines)")
        #expect(lines.contains("  notes <- office                               idle read 123456 written 123456"), "\(lines)")
        #expect(lines.contains("  notes -> couch.example.org:6984/notes-archive idle read 1 written 1"), "\(lines)")
    }

    /// `syncd status PEER` says which of a member's pulls read its whole feed; a remote's do not say.
    @Test func theDetailSaysWhatEachPullFromAMemberReads() {
        let now = Date()
        var status = Self.crowded(now: now)
        status.peers = [status.peers[1]]
        status.replications = [status.replications[1], status.replications[1], status.replications[10]]
        status.replications[0].feed = "whole"
        status.replications[1].database = "notes"
        status.replications[1].feed = "first_hand"
        let lines = StatusText(status, detailed: true, now: now).text.split(separator: "\n").map(String.init)
        let whole = "    reads every change the peer has"
        let firstHand = "    reads what entered the group there; other members carry the rest"
        #expect(lines.filter { $0 == whole || $0 == firstHand } == [whole, firstHand], "\(lines)")
        let brief = StatusText(status, detailed: false, now: now).text
        #expect(!brief.contains(whole) && !brief.contains(firstHand), "\(brief)")
    }
}

/// `syncd status PEER` names a peer by the rule `syncd peers remove` uses.
struct StatusPeerNamingTests {
    @Test func aPeerIsNamedByItsNameUUIDIDOrAnIDPrefixOfFourOrMore() throws {
        let id = NodeID(certificateDER: [1, 2, 3])
        let peer = AgentStatus.Peer(name: "kitchen", id: id.description, uuid: String(repeating: "a", count: 32), pairedAt: Date(),
                                    state: "online", address: nil, reason: nil, lastSeen: nil, databases: [])
        let prefix = String(id.compact.prefix(4))
        for text in ["kitchen", String(repeating: "a", count: 32), id.description, id.compact, prefix, prefix.lowercased()] {
            #expect(peer.isNamed(by: text), "\(text)")
        }
        for text in ["", String(prefix.prefix(2)), "kitch", "office", id.compact + "A"] {
            #expect(!peer.isNamed(by: text), "\(text)")
        }
    }
}

import FoundationEssentials

/// The agent's status laid out for a terminal of 80 columns (`syncd status`):
/// columns as wide as their longest entry, never cut, and lines that would pass
/// 80 columns broken at spaces.
public struct StatusText: Sendable {
    let status: AgentStatus
    let detailed: Bool
    let now: Date

    /// The status as of `now`; `detailed` adds each peer's ID, UUID and databases.
    public init(_ status: AgentStatus, detailed: Bool, now: Date = Date()) {
        self.status = status
        self.detailed = detailed
        self.now = now
    }

    /// The lines, each ending in a newline.
    public var text: String {
        var lines: [String] = []
        let node = status.node
        lines.append("● syncd \(node.version) on \(node.name), up \(Self.age(node.started, now))")
        lines.append("  ID    \(node.id)")
        lines.append("  UUID  \(node.uuid)")
        for url in node.urls { lines.append("  URL   \(url)") }
        lines.append("  Data  \(node.dataDirectory)")
        lines.append("")
        lines.append("Discovery: \(status.discovery.state)" + (status.discovery.reason.map { " (\($0))" } ?? ""))
        lines.append("")
        lines.append("Peers (\(status.peers.count)):")
        if status.peers.isEmpty { lines.append("  none yet: run `syncd pair` here, or join another node's invitation") }
        let peerRows = status.peers.map { peer in
            let seen = peer.state == "online" ? "connected" : peer.lastSeen.map { "seen \(Self.age($0, now)) ago" } ?? "never seen"
            return [peer.name, String(peer.id.prefix(9)), peer.state, peer.address ?? "", seen]
        }
        for (peer, row) in zip(status.peers, Self.table(peerRows, keys: 2)) {
            lines += row
            if let reason = peer.reason { lines.append("    \(reason)") }
            if let introducers = peer.introducedBy { lines.append("    introduced by \(introducers.joined(separator: ", "))") }
            if detailed {
                lines.append("    ID \(peer.id)")
                lines.append("    UUID \(peer.uuid), paired \(peer.pairedAt.formatted(.iso8601))")
                lines.append("    shares \(peer.databases.joined(separator: ", "))")
            }
        }
        lines.append("")
        lines.append("Replications (\(status.replications.count)):")
        let replicationRows = status.replications.map { replication in
            var counts = "read \(replication.docsRead) written \(replication.docsWritten)"
            if replication.docWriteFailures > 0 { counts += " failed \(replication.docWriteFailures)" }
            if let pending = replication.changesPending, pending > 0 { counts += " pending \(pending)" }
            return [replication.database, replication.direction == "pull" ? "<-" : "->", Self.shown(replication.with),
                    replication.state, counts]
        }
        for (replication, row) in zip(status.replications, Self.table(replicationRows, keys: 3)) {
            lines += row
            if let error = replication.lastError { lines.append("    last error: \(error)") }
            if detailed, let feed = replication.feed {
                lines.append(feed == "first_hand" ? "    reads what entered the group there; other members carry the rest"
                                                  : "    reads every change the peer has")
            }
        }
        if !detailed {
            lines.append("")
            lines.append("Databases (\(status.databases.count)):")
            let width = status.databases.map(\.name.count).max() ?? 0
            for database in status.databases {
                lines.append("  \(Self.pad(database.name, width)) \(database.docCount) docs, \(database.docDelCount) deleted, "
                             + "seq \(database.updateSeq), \(Self.bytes(database.sizeOnDisk))")
                if let members = database.sharedWith, !members.isEmpty {
                    lines.append("  \(Self.pad("", width)) shared with \(members.joined(separator: ", "))")
                }
            }
        }
        let problems = status.problems
        if !problems.isEmpty {
            lines.append("")
            lines.append("Problems (\(problems.count)):")
            for problem in problems { lines.append("  ! \(problem)") }
        }
        return lines.flatMap(Self.fit).joined(separator: "\n") + "\n"
    }

    /// `rows` as aligned columns, one line each, indented by 2; when that passes 80
    /// columns, every row takes two lines: its first `keys` columns, then the rest below.
    static func table(_ rows: [[String]], keys: Int) -> [[String]] {
        func aligned(_ rows: [[String]]) -> [String] {
            let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
            return rows.map { row in
                let line = zip(row, widths).map { pad($0, $1) }.joined(separator: " ")
                return "  " + String(line.reversed().drop { $0 == " " }.reversed())
            }
        }
        let wide = aligned(rows)
        guard wide.contains(where: { $0.count > 80 }) else { return wide.map { [$0] } }
        let heads = aligned(rows.map { Array($0.prefix(keys)) })
        return zip(heads, rows).map { head, row in [head, "    " + row.dropFirst(keys).filter { !$0.isEmpty }.joined(separator: " ")] }
    }

    /// A peer's name as it is; a remote's URL as host:port/database (its scheme is in the JSON).
    static func shown(_ with: String) -> String {
        guard let scheme = with.firstRange(of: "://") else { return with }
        return String(with[scheme.upperBound...])
    }

    /// `line` broken at spaces into lines of at most 80 columns, each continuation
    /// indented 4 more than the line; a word longer than that is cut.
    static func fit(_ line: String) -> [String] {
        let width = 80
        guard line.count > width else { return [line] }
        let lead = String(line.prefix { $0 == " " })
        let indent = lead + "    "
        var lines: [String] = []
        var current = lead
        var empty = true
        for word in line.dropFirst(lead.count).split(separator: " ", omittingEmptySubsequences: false) {
            let longer = empty ? current + word : current + " " + word
            if longer.count <= width || empty {
                current = longer
            } else {
                lines.append(current)
                current = indent + word
            }
            empty = false
            while current.count > width {
                lines.append(String(current.prefix(width)))
                current = indent + current.dropFirst(width)
            }
        }
        lines.append(current)
        return lines
    }

    /// `text` followed by spaces up to `width` columns; never cut.
    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    static func age(_ date: Date, _ now: Date) -> String {
        let seconds = max(0, Int(now.timeIntervalSince(date)))
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m" }
        if seconds < 86400 { return "\(seconds / 3600)h \(seconds % 3600 / 60)m" }
        return "\(seconds / 86400)d \(seconds % 86400 / 3600)h"
    }

    static func bytes(_ count: Int) -> String {
        if count < 1 << 20 { return "\(count >> 10) KiB" }
        if count < 1 << 30 { return "\(count >> 20) MiB" }
        let tenths = (count * 10 + (1 << 29)) >> 30  // rounded to the nearest tenth
        return "\(tenths / 10).\(tenths % 10) GiB"
    }
}

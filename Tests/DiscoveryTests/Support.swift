import Discovery
import Foundation
import SyncAgent
import TestBed

/// One JSON line printed by `syncd browse --json` or `syncd advertise --json`.
struct EventLine: Decodable {
    var event: String
    var time: Double
    var name: String?
    var from: String?
    var to: String?
    var reason: String?
    var message: String?
    var peer: Peer?

    init?(_ line: String) {
        guard let value = try? JSONDecoder().decode(EventLine.self, from: Data(line.utf8)) else { return nil }
        self = value
    }
}

extension ChildProcess {
    /// Waits for a JSON event line at index `from` or later that satisfies `predicate`.
    @discardableResult
    func waitForEvent(
        from: Int = 0, timeout: Duration = .seconds(10), where predicate: (EventLine) -> Bool
    ) async throws -> (index: Int, event: EventLine) {
        let (index, line) = try await waitForLine(from: from, timeout: timeout) { line in
            EventLine(line).map(predicate) ?? false
        }
        return (index, EventLine(line)!)
    }

    /// Every JSON event line printed so far.
    var events: [EventLine] { lines.compactMap(EventLine.init) }
}

extension TestHost {
    /// Starts `syncd advertise --json` in this host.
    func advertise(
        uuid: String, port: UInt16, database: String = "notes", name: String? = nil,
        fingerprint: String? = nil, type: String? = nil
    ) throws -> ChildProcess {
        var command = [try TestBed.syncdExecutable, "advertise", "--json", "--uuid", uuid, "--port", String(port), "--database", database]
        if let name { command += ["--name", name] }
        if let fingerprint { command += ["--tls", "--fingerprint", fingerprint] }
        if let type { command += ["--type", type] }
        return try spawn(command)
    }

    /// Starts `syncd browse --watch --json` in this host.
    func watchPeers(type: String? = nil) throws -> ChildProcess {
        var command = [try TestBed.syncdExecutable, "browse", "--watch", "--json"]
        if let type { command += ["--type", type] }
        return try spawn(command)
    }
}

/// A fresh node UUID.
func newUUID() -> String { UUID().uuidString.lowercased() }

import FoundationEssentials
import JSON
import NIOCore
import NIOFoundationEssentialsCompat
import NIOHTTP1
import Store

/// The running agent's node, asked over its control socket (``NodeRoutes``):
/// what the commands use while an agent holds the data directory.
public struct AgentControl: NodeControl {
    /// The agent's control socket.
    public let client: ControlClient

    /// The node of the agent listening on `client`'s socket.
    public init(client: ControlClient) {
        self.client = client
    }

    /// How the control API writes and reads its values: dates in ISO 8601.
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    public func users() async throws -> [UserEntry] {
        try await ask(.GET, "/_syncd/users", as: [String: [UserEntry]].self)["users"] ?? []
    }

    public func setUser(_ name: String, password: String, roles: [String]?) async throws -> UserEntry {
        var body: JSON.Object = ["password": .string(password)]
        if let roles { body["roles"] = .array(roles.map { .string($0) }) }
        // Hashing the password takes the agent a while (PBKDF2, and longer in a sanitized build).
        return try await ask(.PUT, "/_syncd/users/" + PathEncoding.segment(name), body: body, timeout: .seconds(300), as: UserEntry.self)
    }

    public func removeUser(_ name: String) async throws -> Bool {
        do {
            _ = try await ask(.DELETE, "/_syncd/users/" + PathEncoding.segment(name), as: [String: Bool].self)
            return true
        } catch NodeControlError.reported(404, _, _) {
            return false
        }
    }

    public func peers() async throws -> [PairedPeer] {
        try await ask(.GET, "/_syncd/peers", as: [String: [PairedPeer]].self)["peers"] ?? []
    }

    public func removePeer(_ text: String) async throws -> PairedPeer {
        try await ask(.DELETE, "/_syncd/peers/" + PathEncoding.segment(text), as: PairedPeer.self)
    }

    public func join(_ url: String, port: Int?, introduce: Bool) async throws -> PairedPeer {
        var body: JSON.Object = ["url": .string(url), "introduce": .bool(introduce)]
        if let port { body["port"] = .number(Double(port)) }
        return try await ask(.POST, "/_syncd/peers", body: body, timeout: .seconds(60), as: PairedPeer.self)
    }

    public func invite(databases: [String], lifetime: Duration, introduce: Bool) async throws -> InvitationTicket {
        let body: JSON.Object = ["databases": .array(databases.map { .string($0) }),
                                 "lifetime": .number(Double(lifetime.components.seconds)), "introduce": .bool(introduce)]
        return try await ask(.POST, "/_syncd/invitations", body: body, as: InvitationTicket.self)
    }

    public func waitForInvitation(_ handle: String, atMost limit: Duration?) async throws -> InvitationWatch.Outcome {
        let deadline = limit.map { ContinuousClock.now + $0 }
        while true {
            // Each ask is held by the agent until the invitation ends or its longest wait passes.
            let left = deadline.map { max(.zero, $0 - .now) } ?? CouchResponder.longestInvitationWait
            let seconds = Int64(min(left, CouchResponder.longestInvitationWait).components.seconds)
            let (status, body) = try await client.request(.GET, "/_syncd/invitations/\(PathEncoding.segment(handle))?wait=\(seconds)",
                                                          timeout: .seconds(seconds + 10))
            let json = try ControlClient.answer(status, body)
            guard let state = InvitationState(json: json) else { throw ControlClient.Failure.badAnswer("no invitation state") }
            if state.outcome != .open || Task.isCancelled { return state.outcome }
            if let deadline, deadline <= .now { return .open }
        }
    }

    public func cancelInvitations(handle: String?) async throws -> Int {
        let path = "/_syncd/invitations" + (handle.map { "/" + PathEncoding.segment($0) } ?? "")
        return try await ask(.DELETE, path, as: [String: Int].self)["cancelled"] ?? 0
    }

    public func openDatabase(_ name: String) async throws -> DatabaseSummary {
        guard Catalog.isValidName(name) else { throw NodeControlError.invalid("'\(name)' is not a valid database name") }
        // One path segment, whatever the name holds (`a/b` is a database name, not a document path).
        let path = "/" + PathEncoding.segment(name)
        _ = try await client.request(.PUT, path)  // 412 when it exists
        let (status, body) = try await client.request(.GET, path)
        let json = try ControlClient.answer(status, body)
        return DatabaseSummary(uuid: json["uuid"]?.stringValue ?? "", documents: json["doc_count"]?.intValue ?? 0,
                               deleted: json["doc_del_count"]?.intValue ?? 0,
                               updateSequence: json["update_seq"].map { $0.stringValue ?? $0.serialized() } ?? "",
                               size: json["sizes"]?["file"]?.intValue ?? 0)
    }

    // MARK: Asking

    private func ask<Value: Decodable>(_ method: HTTPMethod, _ path: String, body: JSON.Object? = nil,
                                       timeout: Duration = .seconds(10), as type: Value.Type) async throws -> Value {
        let (status, answer) = try await client.request(method, path, body: body.map { JSON.object($0).serializedBytes() }, timeout: timeout)
        guard (200..<300).contains(status) else { _ = try ControlClient.answer(status, answer); throw ControlClient.Failure.badAnswer("HTTP \(status)") }
        do {
            return try Self.decoder.decode(Value.self, from: Data(buffer: answer))
        } catch {
            throw ControlClient.Failure.badAnswer("\(error)")
        }
    }
}

import JSON
import Store

/// Runs design documents' JavaScript functions in query server processes, for the store
/// (``Database/Options/designFunctions``): `validate_doc_update` on writes, where each update is
/// judged by every design document in id order and the first refusal is the update's, and
/// filter functions on change feeds, one document a command, as CouchDB runs them.
public struct JavaScriptDesignFunctions: DesignFunctions {
    private let servers: QueryServers

    /// Functions run on `servers`.
    public init(servers: QueryServers) {
        self.servers = servers
    }

    public func validate(_ updates: [ProposedUpdate], by designs: [DesignDocument], context: ValidationContext) async -> [StoreError?] {
        let designs = designs.sorted { $0.id < $1.id }
        var commands: [[UInt8]] = []
        commands.reserveCapacity(updates.count * designs.count)
        for update in updates {
            let arguments: JSON = [update.newDocument, update.oldDocument ?? .null, context.userContext, context.security]
            for design in designs {
                commands.append(JSON.array(["ddoc", .string(design.id), ["validate_doc_update"], arguments]).serializedBytes())
            }
        }
        let outcomes = await servers.runSpread(commands, designs: designs.map { ($0.id, $0.revision, $0.document) })
        return updates.indices.map { index in
            outcomes[index * designs.count..<(index + 1) * designs.count].lazy.compactMap(Self.refusal).first
        }
    }

    public func filter(_ documents: [JSON], by function: DesignFilter, of design: DesignDocument, request: JSON) async throws(StoreError) -> [Bool] {
        let path: JSON, arguments: (JSON) -> JSON
        switch function {
        case .filter(let name):
            path = ["filters", .string(name)]
            arguments = { [[$0], request] }
        case .view(let name):
            path = ["views", .string(name), "map"]
            arguments = { [[$0]] }
        }
        let commands = documents.map { JSON.array(["ddoc", .string(design.id), path, arguments($0)]).serializedBytes() }
        let outcomes = await servers.run(commands, designs: [(design.id, design.revision, design.document)])
        return try outcomes.map { outcome throws(StoreError) in
            if case .answer(.array(let parts)) = outcome, parts.count == 2, parts[0] == true, case .array(let verdicts) = parts[1], verdicts.count == 1 {
                return verdicts[0] == true
            }
            throw Self.refusal(outcome) ?? StoreError(.internal, error: "unknown_error", reason: "the filter gave no verdict")
        }
    }

    /// What one function's answer means for the write: `nil` to go on.
    static func refusal(_ outcome: QueryServers.Outcome) -> StoreError? {
        switch outcome {
        case .failed(let failure):
            return StoreError(.internal, error: failure.error, reason: failure.reason)
        case .answer(let answer):
            switch answer {
            case .number(1), .bool(true):
                return nil
            case .object(let object) where object.count == 1:
                let (key, value) = object.members[0]
                let reason = value.stringValue ?? value.serialized()
                switch key {
                case "forbidden": return StoreError(.forbidden, error: "forbidden", reason: reason)
                case "unauthorized": return StoreError(.unauthorized, error: "unauthorized", reason: reason)
                default: return StoreError(.internal, error: "unknown_error", reason: reason)
                }
            case .array(let parts) where parts.count == 3 && parts[0] == "error":
                return StoreError(.internal, error: parts[1].stringValue ?? "unknown_error", reason: parts[2].stringValue ?? parts[2].serialized())
            case .string(let message):
                return StoreError(.internal, error: "unknown_error", reason: message)
            default:
                return StoreError(.internal, error: "unknown_error", reason: answer.serialized())
            }
        }
    }
}

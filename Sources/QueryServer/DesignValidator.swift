import JSON
import Store

/// Runs design documents' `validate_doc_update` functions in query server processes, for the
/// store's writes (``Database/Options/validator``). Each update is judged by every design
/// document in id order, and the first refusal is the update's, as in CouchDB.
public struct DesignValidator: UpdateValidator {
    private let servers: QueryServers

    /// A validator running its functions on `servers`.
    public init(servers: QueryServers) {
        self.servers = servers
    }

    public func validate(_ updates: [ProposedUpdate], by designs: [ValidatingDesign], context: ValidationContext) async -> [StoreError?] {
        let designs = designs.sorted { $0.id < $1.id }
        var commands: [[UInt8]] = []
        commands.reserveCapacity(updates.count * designs.count)
        for update in updates {
            let arguments: JSON = [update.newDocument, update.oldDocument ?? .null, context.userContext, context.security]
            for design in designs {
                commands.append(JSON.array(["ddoc", .string(design.id), ["validate_doc_update"], arguments]).serializedBytes())
            }
        }
        let outcomes = await servers.run(commands, designs: designs.map { ($0.id, $0.revision, $0.document) })
        return updates.indices.map { index in
            outcomes[index * designs.count..<(index + 1) * designs.count].lazy.compactMap(Self.refusal).first
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

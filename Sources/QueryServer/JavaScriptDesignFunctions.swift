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

    public func map(_ documents: [JSON], by group: ViewGroup) async throws(StoreError) -> [[[ViewEmission]]] {
        guard group.language == "javascript" else {
            throw StoreError(.internal, error: "unknown_query_language", reason: group.language)
        }
        var setup: [[UInt8]] = [JSON.array(["reset", ["reduce_limit": true]]).serializedBytes()]
        if let library = group.library { setup.append(JSON.array(["add_lib", library]).serializedBytes()) }
        setup += group.views.map { JSON.array(["add_fun", .string($0.map)]).serializedBytes() }
        let commands = documents.map { JSON.array(["map_doc", $0]).serializedBytes() }
        let outcomes = await servers.runSpread(commands, setup: setup, minimumPart: 256, stoppingAtFailure: true)
        for outcome in outcomes.prefix(setup.count) where outcome != .answer(true) {
            throw Self.refusal(outcome) ?? StoreError(.internal, error: "unknown_error", reason: "the query server refused a view's function")
        }
        return try outcomes.dropFirst(setup.count).map { outcome throws(StoreError) in
            guard case .answer(.array(let perView)) = outcome, perView.count == group.views.count else {
                throw Self.refusal(outcome) ?? StoreError(.internal, error: "unknown_error", reason: "the map gave no rows")
            }
            return try perView.map { rows throws(StoreError) in
                guard case .array(let rows) = rows else { throw StoreError(.internal, error: "unknown_error", reason: "the map gave no rows") }
                return try rows.map { row throws(StoreError) in
                    guard case .array(let pair) = row, pair.count == 2 else {
                        throw StoreError(.internal, error: "unknown_error", reason: "the map gave a row that is not [key, value]")
                    }
                    return ViewEmission(key: pair[0], value: pair[1])
                }
            }
        }
    }

    public func reduce(_ calls: [ReduceCall], by source: String, of group: ViewGroup) async throws(StoreError) -> [JSON] {
        var setup: [[UInt8]] = [JSON.array(["reset", ["reduce_limit": true]]).serializedBytes()]
        if let library = group.library { setup.append(JSON.array(["add_lib", library]).serializedBytes()) }
        let commands = calls.map { call -> [UInt8] in
            if let keys = call.keys {
                return JSON.array(["reduce", [.string(source)], .array(zip(keys, call.values).map { [$0, $1] })]).serializedBytes()
            }
            return JSON.array(["rereduce", [.string(source)], .array(call.values)]).serializedBytes()
        }
        let outcomes = await servers.runSpread(commands, setup: setup, minimumPart: 64, stoppingAtFailure: true)
        return try zip(commands, outcomes.dropFirst(setup.count)).map { command, outcome throws(StoreError) in
            guard case .answer(.array(let parts)) = outcome, parts.count == 2, parts[0] == true,
                case .array(let results) = parts[1], results.count == 1
            else {
                throw Self.refusal(outcome) ?? StoreError(.internal, error: "unknown_error", reason: "the reduce gave no value")
            }
            // CouchDB's reduce_limit: a reduce must shrink what it is given.
            let size = results[0].serializedBytes().count
            if size > 4096, size * 2 > command.count {
                throw StoreError(.internal, error: "reduce_overflow_error", reason: "Reduce output must shrink more rapidly: Current output: '\(String(decoding: results[0].serializedBytes().prefix(100), as: UTF8.self))'... (first 100 of \(size) bytes)")
            }
            return results[0]
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

import JSON

/// A reduce query's rows being folded: rows come in key order, and each run of rows with the
/// same group key (the whole key, its first N array elements, or everything) becomes one row.
/// Built-in reduces fold as rows come; a JavaScript reduce is called on runs of at most
/// ``callRows`` rows, then on its own results (`rereduce`) until one value is left.
struct ReducedGroups {
    /// The most rows, or results, one reduce call is given.
    static let callRows = 1_000

    private struct Group {
        let range: Int
        let key: JSON
        let sortKey: [UInt8]
        var accumulator: BuiltinReduce.Accumulator?
        /// A JavaScript reduce's results so far, and the rows not yet given to it.
        var partials: [JSON] = []
        var keys: [JSON] = []
        var values: [JSON] = []
    }

    let level: Int?
    let builtin: BuiltinReduce?
    let skip: Int
    let limit: Int
    private var groups: [Group] = []
    private var closed = 0
    /// Calls waiting to run: which group, and on what.
    private var calls: [(group: Int, call: ReduceCall)] = []

    init(level: Int?, builtin: BuiltinReduce?, skip: Int, limit: Int) {
        self.level = level
        self.builtin = builtin
        self.skip = skip
        self.limit = limit
    }

    /// Whether every row the query wants is folded (later groups would be past `limit`).
    var isFull: Bool { closed >= skip &+ limit }

    /// The key of the group `row` belongs to.
    private func groupKey(of row: ViewScan.Row) -> (JSON, [UInt8]) {
        guard let level else { return (.null, []) }
        if level == .max { return (row.key, row.sortKey) }
        guard case .array(let elements) = row.key, elements.count > level else { return (row.key, row.sortKey) }
        let key = JSON.array(Array(elements.prefix(level)))
        return (key, CollationSortKey.of(key))
    }

    mutating func add(_ row: ViewScan.Row) throws(StoreError) {
        let (key, sortKey) = groupKey(of: row)
        if let last = groups.last, last.range == row.range, last.sortKey == sortKey {} else {
            close()
            if isFull { return }
            groups.append(Group(range: row.range, key: key, sortKey: sortKey, accumulator: builtin.map(BuiltinReduce.Accumulator.init)))
        }
        let index = groups.count - 1
        if groups[index].accumulator != nil {
            try groups[index].accumulator!.add(sortKey: row.sortKey, value: row.value)
        } else {
            groups[index].keys.append([row.key, .string(row.id)])
            groups[index].values.append(row.value)
            if groups[index].values.count >= Self.callRows { queue(index) }
        }
    }

    /// The last group has all its rows.
    mutating func finish() { close() }

    private mutating func close() {
        guard closed < groups.count else { return }
        if groups[closed].accumulator == nil { queue(closed) }
        closed += 1
    }

    private mutating func queue(_ index: Int) {
        guard !groups[index].values.isEmpty else { return }
        calls.append((index, ReduceCall(keys: groups[index].keys, values: groups[index].values)))
        groups[index].keys = []
        groups[index].values = []
    }

    /// Runs the reduce calls waiting (by `reduce`), and rereduces the closed groups with more than one result.
    mutating func runCalls(_ reduce: (_ calls: [ReduceCall]) async throws(StoreError) -> [JSON]) async throws(StoreError) {
        while true {
            for index in 0..<closed where groups[index].partials.count > 1 {
                for start in stride(from: 0, to: groups[index].partials.count, by: Self.callRows) {
                    let part = Array(groups[index].partials[start..<min(start + Self.callRows, groups[index].partials.count)])
                    calls.append((index, ReduceCall(keys: nil, values: part)))
                }
                groups[index].partials = []
            }
            guard !calls.isEmpty else { return }
            let waiting = calls
            calls = []
            let results = try await reduce(waiting.map(\.call))
            for (entry, result) in zip(waiting, results) { groups[entry.group].partials.append(result) }
        }
    }

    /// The reduced rows, after `skip`, at most `limit`.
    func rows() throws(StoreError) -> [ViewRow] {
        groups.prefix(closed).dropFirst(skip).prefix(limit).map { group in
            ViewRow(id: nil, key: level == nil ? .null : group.key, value: group.accumulator?.result ?? group.partials.first ?? .null, document: nil)
        }
    }
}

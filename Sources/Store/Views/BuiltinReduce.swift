import Glibc
import JSON

/// The reduce functions CouchDB runs natively (`_count`, `_sum`, `_stats`,
/// `_approx_count_distinct`): folded row by row, so a group of any size costs constant memory.
enum BuiltinReduce: String, Sendable {
    case count = "_count"
    case sum = "_sum"
    case stats = "_stats"
    case approximateCountDistinct = "_approx_count_distinct"

    /// The built-in `source` names (CouchDB reads a name that starts with `_`, surrounding
    /// blanks aside); `nil` for a JavaScript function.
    init?(source: String) {
        self.init(rawValue: String(source.trimmingBlanks))
    }

    /// Whether `source` names a built-in, known or not.
    static func isBuiltin(_ source: String) -> Bool { source.trimmingBlanks.hasPrefix("_") }

    /// A fold of one group's rows.
    struct Accumulator: Sendable {
        let function: BuiltinReduce
        private var count = 0
        private var total: JSON?
        private var statistics: [Statistics]?
        private var statisticsAreArray = false
        private var sketch: DistinctSketch?
        private var failure: JSON?

        init(_ function: BuiltinReduce) {
            self.function = function
            if function == .approximateCountDistinct { sketch = DistinctSketch() }
        }

        /// Adds a row (its key's sort key, for `_approx_count_distinct`, and its value).
        mutating func add(sortKey: [UInt8], value: JSON) throws(StoreError) {
            count += 1
            switch function {
            case .count:
                break
            case .sum:
                // As CouchDB 3.5: a value `_sum` cannot add makes the group's value an error, not the query's.
                guard failure == nil else { return }
                do {
                    total = try total.map { total throws(StoreError) in try Self.sum(total, value) } ?? Self.checkedSummand(value)
                } catch {
                    failure = ["error": "builtin_reduce_error", "reason": .string(Self.sumError), "caused_by": value]
                }
            case .stats:
                try addStatistics(value)
            case .approximateCountDistinct:
                sketch?.add(sortKey)
            }
        }

        /// The group's value.
        var result: JSON {
            switch function {
            case .count: return .number(Double(count))
            case .sum: return failure ?? total ?? 0
            case .stats:
                guard let statistics else { return .null }
                return statisticsAreArray ? .array(statistics.map(\.json)) : statistics[0].json
            case .approximateCountDistinct: return .number(Double(sketch?.estimate ?? 0))
            }
        }

        private static let sumError = "The _sum function requires that map values be numbers, arrays of numbers, or objects. Objects cannot be mixed with other data structures. Objects can be arbitrarily nested, provided that the values for all fields are themselves numbers, arrays of numbers, or objects."

        private static func sumFailure(_ value: JSON) -> StoreError {
            StoreError(.internal, error: "builtin_reduce_error", reason: sumError)
        }

        private static func checkedSummand(_ value: JSON) throws(StoreError) -> JSON {
            try sum(.number(0), value, first: true)
        }

        /// CouchDB's `_sum` of two values: numbers add, arrays add element by element (a
        /// number counting as an array of one), objects add member by member.
        private static func sum(_ a: JSON, _ b: JSON, first: Bool = false) throws(StoreError) -> JSON {
            switch (a, b) {
            case (.number(let x), .number(let y)):
                return .number(first ? y : x + y)
            case (.number, .bigInteger), (.bigInteger, _):
                guard let x = a.doubleValue, let y = b.doubleValue else { throw sumFailure(b) }
                return .number(first ? y : x + y)
            case (.number(let x), .array(let ys)):
                return try first ? sumArrays([], ys) : sumArrays([.number(x)], ys)
            case (.array(let xs), .number(let y)):
                return try sumArrays(xs, [.number(y)])
            case (.array(let xs), .array(let ys)):
                return try sumArrays(xs, ys)
            case (.number(let x), .object(let object)):
                guard first || x == 0 else { throw sumFailure(b) }
                return try sumObjects([:], object)
            case (.object(let xs), .object(let ys)):
                return try sumObjects(xs, ys)
            default:
                throw sumFailure(b)
            }
        }

        private static func sumArrays(_ xs: [JSON], _ ys: [JSON]) throws(StoreError) -> JSON {
            var result: [JSON] = []
            for index in 0..<max(xs.count, ys.count) {
                let x: JSON = index < xs.count ? xs[index] : 0, y: JSON = index < ys.count ? ys[index] : 0
                guard let a = x.doubleValue else { throw sumFailure(x) }
                guard let b = y.doubleValue else { throw sumFailure(y) }
                result.append(.number(a + b))
            }
            return .array(result)
        }

        private static func sumObjects(_ xs: JSON.Object, _ ys: JSON.Object) throws(StoreError) -> JSON {
            var result = xs
            for (key, value) in ys.members {
                if let existing = result[key] {
                    result[key] = try sum(existing, value)
                } else {
                    result[key] = try checkedSummand(value)
                }
            }
            return .object(result)
        }

        private mutating func addStatistics(_ value: JSON) throws(StoreError) {
            func failure() -> StoreError {
                StoreError(.internal, error: "invalid_value",
                           reason: "The _stats function requires that map values be numbers or arrays of numbers, not '\(value.serialized())'")
            }
            var added: [Statistics]
            var isArray = false
            switch value {
            case .number, .bigInteger:
                added = [Statistics(value.doubleValue ?? 0)]
            case .array(let elements):
                isArray = true
                added = []
                for element in elements {
                    guard let number = element.doubleValue else { throw failure() }
                    added.append(Statistics(number))
                }
            case .object:
                // Statistics already folded (a rereduce, or a map emitting them).
                guard let sum = value["sum"]?.doubleValue, let count = value["count"]?.doubleValue,
                    let min = value["min"]?.doubleValue, let max = value["max"]?.doubleValue,
                    let sumsqr = value["sumsqr"]?.doubleValue
                else { throw failure() }
                added = [Statistics(sum: sum, count: count, min: min, max: max, sumOfSquares: sumsqr)]
            default:
                throw failure()
            }
            guard var statistics else {
                self.statistics = added
                statisticsAreArray = isArray
                return
            }
            if isArray != statisticsAreArray, !(added.count == 1 && statistics.count == 1) { throw failure() }
            statisticsAreArray = statisticsAreArray || isArray
            for index in 0..<max(statistics.count, added.count) {
                if index >= statistics.count { statistics.append(added[index]) } else if index < added.count { statistics[index].merge(added[index]) }
            }
            self.statistics = statistics
        }
    }

    /// `_stats` of some numbers.
    struct Statistics: Sendable {
        var sum: Double, count: Double, min: Double, max: Double, sumOfSquares: Double

        init(_ number: Double) {
            self.init(sum: number, count: 1, min: number, max: number, sumOfSquares: number * number)
        }

        init(sum: Double, count: Double, min: Double, max: Double, sumOfSquares: Double) {
            (self.sum, self.count, self.min, self.max, self.sumOfSquares) = (sum, count, min, max, sumOfSquares)
        }

        mutating func merge(_ other: Statistics) {
            sum += other.sum
            count += other.count
            min = Swift.min(min, other.min)
            max = Swift.max(max, other.max)
            sumOfSquares += other.sumOfSquares
        }

        var json: JSON {
            ["sum": .number(sum), "count": .number(count), "min": .number(min), "max": .number(max), "sumsqr": .number(sumOfSquares)]
        }
    }
}

/// A HyperLogLog sketch of distinct keys (2,048 registers, as CouchDB's `hyper` at precision
/// 11): a few kilobytes whatever the count, within about 2 % beyond a few thousand, and exact
/// in practice for small counts, where linear counting takes over.
struct DistinctSketch: Sendable {
    private static let precision = 11
    private var registers = [UInt8](repeating: 0, count: 1 << precision)

    mutating func add(_ bytes: [UInt8]) {
        // FNV-1a, then a 64-bit finalizer to spread it.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash = hash &* 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        let index = Int(hash >> UInt64(64 - Self.precision))
        let rest = hash << UInt64(Self.precision) | (1 << UInt64(Self.precision - 1))
        let rank = UInt8(rest.leadingZeroBitCount + 1)
        if rank > registers[index] { registers[index] = rank }
    }

    var estimate: Int {
        let m = Double(registers.count)
        var sum = 0.0
        var zeros = 0
        for register in registers {
            sum += 1 / Double(UInt64(1) << UInt64(register))
            if register == 0 { zeros += 1 }
        }
        let raw = 0.7213 / (1 + 1.079 / m) * m * m / sum
        if raw <= 2.5 * m, zeros > 0 { return Int((m * log(m / Double(zeros))).rounded()) }
        return Int(raw.rounded())
    }
}

extension String {
    /// The string without leading and trailing spaces, tabs and line breaks.
    var trimmingBlanks: Substring {
        var text = self[...]
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }
}

import Foundation
import JSON
import Store

/// Mango queries (`syncd-bench query`): building an index beside the store's bulk
/// load, a selective indexed `_find` through `syncd serve` beside the same query
/// without an index, and write throughput with 0, 1 and 3 indexes in alternating
/// rounds: the writes and the index catch-up the first query after them waits for.
/// `--before OLD-SYNCD` serves the indexed query from an older build too, in
/// alternating rounds, and prints the ratio.
func runQueryBenchmarks(arguments: [String]) async throws {
    let count = option("docs", in: arguments, default: 1_000_000)
    let samples = option("samples", in: arguments, default: 1000)
    let writeCount = option("write-docs", in: arguments, default: 100_000)
    let rounds = option("rounds", in: arguments, default: 3)
    let folder = temporaryDirectory("query")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let data = folder + "/served"
    try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
    print("query benchmarks: \(count) documents of ~\(queryDocument(0, count: count).serialized().utf8.count) bytes")

    // 1. The store's bulk load, then one index built over all of it.
    let database = try Database.open(path: data + "/db.sqlite", name: "db")
    var start = now()
    for offset in stride(from: 0, to: count, by: 1000) {
        let batch = (offset..<min(offset + 1000, count)).map { DocumentUpload(queryDocument($0, count: count)) }
        _ = try await database.bulkDocs(batch)
    }
    let loadRate = Double(count) / (now() - start)
    start = now()
    try await database.createIndex(["index": ["fields": ["n"]], "ddoc": "bench", "name": "by-n"])
    try await database.updateIndexes()  // as the first query after POST _index does
    let buildRate = Double(count) / (now() - start)
    figure("bulk load, store (bulkDocs, batches of 1000)", loadRate, "docs/s")
    figure("index build on one field (POST _index, first query)", buildRate, "docs/s")
    figure("index build / bulk load", buildRate / loadRate, "", decimals: 2)
    let check = try await database.find(FindQuery(selective(field: "n", from: count / 2, sorted: true)))
    guard check.documents.count == 100, check.warning == nil else { throw BenchError("the indexed query found \(check.documents.count) documents") }
    database.close()

    // 2. The selective query through the listener, with and without an index; with
    // `--before OLD-SYNCD`, the older build serves the same data in alternating rounds.
    let builds = comparedBuilds(this: BenchProcess.executable, arguments: arguments)
    var generator = SystemRandomNumberGenerator()
    func timed(_ server: BenchProcess, _ body: JSON) async throws -> Double {
        let begin = now()
        let status = try await BenchHTTP.send("POST", server.url + "/db/_find", body: body.serialized())
        guard status == 200 else { throw BenchError("_find answered \(status)") }
        return (now() - begin) * 1000
    }
    var indexed: [String: [Double]] = [:]
    for round in 0..<rounds {
        for build in round % 2 == 0 ? builds : builds.reversed() {
            let server = try BenchProcess.serve(data: data, executable: build.executable)
            defer { server.stop() }
            var times: [Double] = []
            for _ in 0..<max(1, samples / rounds) {
                times.append(try await timed(server, selective(field: "n", from: Int.random(in: 0..<(count - 100), using: &generator), sorted: true)))
            }
            figure("round \(round + 1), \(build.name): _find p50", percentile(times, 50), "ms", decimals: 2)
            indexed[build.name, default: []] += times
        }
    }
    let ours = indexed[builds[0].name]!
    figure("_find, 100 of \(count) by an index, sorted: p50 (goal <= 2)", percentile(ours, 50), "ms", decimals: 2)
    figure("_find, 100 of \(count) by an index, sorted: p99", percentile(ours, 99), "ms", decimals: 2)
    if builds.count == 2, let before = indexed[builds[1].name] {
        figure("--before: p50", percentile(before, 50), "ms", decimals: 2)
        figure("--before: p99", percentile(before, 99), "ms", decimals: 2)
        figure("this build / --before (p50)", percentile(ours, 50) / percentile(before, 50), "x", decimals: 2)
    }
    let server = try BenchProcess.serve(data: data)
    defer { server.stop() }
    var scanned: [Double] = []
    for _ in 0..<3 {
        scanned.append(try await timed(server, selective(field: "m", from: Int.random(in: 0..<(count - 100), using: &generator), sorted: false)))
    }
    figure("the same query on an unindexed field (3 runs): p50", percentile(scanned, 50), "ms", decimals: 1)
    figure("unindexed / indexed (p50)", percentile(scanned, 50) / percentile(ours, 50), "", decimals: 0)
    server.stop()

    // 3. Writes with 0, 1 and 3 indexes, in alternating rounds into new files; the best round of each counts.
    let indexSets: [[String]] = [[], ["n"], ["n", "sensor", "value"]]
    var rates = Array(repeating: 0.0, count: indexSets.count)
    // The same writes with plain SQLite statements, without and with the three fields
    // indexed (`json_extract` expression indexes): what SQLite's own indexes cost.
    let bodies = (0..<writeCount).map { queryDocument($0, count: writeCount).serialized() }
    var plainRates = [0.0, 0.0]
    for round in 1...rounds {
        var line: [String] = []
        for (slot, fields) in [[], indexSets[2]].enumerated() {
            let path = folder + "/plain-\(round)-\(slot).sqlite"
            let rate = try plainSQLiteInsert(path: path, bodies: bodies, batch: 1000, indexedFields: fields)
            plainRates[slot] = max(plainRates[slot], rate)
            line.append("plain SQLite, \(fields.count) indexes \(Int(rate)) docs/s")
            removeDatabase(at: path)
        }
        for (slot, fields) in indexSets.enumerated() {
            let path = folder + "/writes-\(round)-\(slot).sqlite"
            let db = try Database.open(path: path)
            for field in fields { try await db.createIndex(["index": ["fields": [.string(field)]]]) }
            let uploads = (0..<writeCount).map { DocumentUpload(queryDocument($0, count: writeCount)) }
            let begin = now()
            for offset in stride(from: 0, to: writeCount, by: 1000) {
                _ = try await db.bulkDocs(Array(uploads[offset..<min(offset + 1000, writeCount)]))
            }
            try await db.updateIndexes()  // what the first query after the writes waits for
            let rate = Double(writeCount) / (now() - begin)
            rates[slot] = max(rates[slot], rate)
            line.append("\(fields.count) indexes \(Int(rate)) docs/s")
            db.close()
            removeDatabase(at: path)
        }
        print("  round \(round): " + line.joined(separator: ", "))
    }
    for (slot, fields) in indexSets.enumerated() {
        figure("bulk writes, then a query, with \(fields.count) indexes (best round)", rates[slot], "docs/s")
    }
    figure("1 index / no index", rates[1] / rates[0], "", decimals: 2)
    figure("3 indexes / no index (goal >= 0.7)", rates[2] / rates[0], "", decimals: 2)
    figure("plain SQLite inserts, no index (best round)", plainRates[0], "docs/s")
    figure("plain SQLite inserts, 3 expression indexes (best round)", plainRates[1], "docs/s")
    figure("plain SQLite: 3 indexes / no index", plainRates[1] / plainRates[0], "", decimals: 2)
}

/// A document of about 200 bytes with `n` and `m` (the same number, one indexed, one
/// not), spread over `0..<count` out of id order.
func queryDocument(_ index: Int, count: Int) -> JSON {
    let n = Double((index * 7919) % max(count, 1))
    return [
        "_id": .string(String(format: "doc-%08d", index)), "type": "reading", "sensor": .string("sensor-\(index % 97)"),
        "value": .number(Double(index % 1000) / 10), "n": .number(n), "m": .number(n),
        "tags": ["lab", .string("floor-\(index % 7)")], "note": .string("benchmark document \(index)"), "site": "north-wing",
    ]
}

/// 100 consecutive values of `field` from `from`.
func selective(field: String, from: Int, sorted: Bool) -> JSON {
    var query: JSON.Object = [
        "selector": .object([field: ["$gte": .number(Double(from)), "$lt": .number(Double(from + 100))]]), "limit": 100,
    ]
    if sorted { query["sort"] = [.string(field)] }
    return .object(query)
}

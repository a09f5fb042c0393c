import Foundation
import JSON
import Store

/// Design documents' JavaScript (`syncd-bench views validation`): `_bulk_docs` through `syncd
/// serve` into a database whose design document has a JavaScript `validate_doc_update`, beside
/// the same writes into one without, in alternating rounds. CouchDB 3.5's figure on this kind of
/// machine (shared/notes/views-anchors.md): 1,094 against 7,798 docs/s, 0.14x; the goal is 0.5x.
func runViewBenchmarks(arguments: [String]) async throws {
    let count = option("docs", in: arguments, default: 20_000)
    let rounds = option("rounds", in: arguments, default: 3)
    let folder = temporaryDirectory("views")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let server = try BenchProcess.serve(data: folder)
    defer { server.stop() }
    // A function of the usual kind: required fields and who may write what.
    let validation = """
        function (newDoc, oldDoc, userCtx, secObj) {
          if (newDoc._deleted) return;
          if (typeof newDoc.n !== 'number') throw({forbidden: 'n must be a number'});
          if (!newDoc.sensor) throw({forbidden: 'sensor is required'});
          if (oldDoc && oldDoc.sensor !== newDoc.sensor) throw({forbidden: 'sensor cannot change'});
        }
        """
    print("views benchmarks: _bulk_docs of \(count) documents of ~\(queryDocument(0, count: count).serialized().utf8.count) bytes in batches of 1,000, \(rounds) alternating rounds")
    var rates: [String: [Double]] = [:]
    for round in 0..<rounds {
        for kind in round % 2 == 0 ? ["plain", "validated"] : ["validated", "plain"] {
            let db = server.url + "/\(kind)-\(round)"
            guard try await BenchHTTP.send("PUT", db) == 201 else { throw BenchError("cannot create \(db)") }
            if kind == "validated" {
                let design = JSON.object(["validate_doc_update": .string(validation)]).serialized()
                guard try await BenchHTTP.send("PUT", db + "/_design/rules", body: design) == 201 else { throw BenchError("cannot write the design document") }
            }
            let begin = now()
            for offset in stride(from: 0, to: count, by: 1000) {
                let docs = (offset..<min(offset + 1000, count)).map { queryDocument($0, count: count) }
                let status = try await BenchHTTP.send("POST", db + "/_bulk_docs", body: JSON.object(["docs": .array(docs)]).serialized())
                guard status == 201 else { throw BenchError("_bulk_docs answered \(status)") }
            }
            let rate = Double(count) / (now() - begin)
            rates[kind, default: []].append(rate)
            print("  round \(round + 1), \(kind): \(Int(rate)) docs/s")
        }
    }
    let plain = median(rates["plain"]!), validated = median(rates["validated"]!)
    figure("_bulk_docs, no design document (median)", plain, "docs/s")
    figure("_bulk_docs, one JavaScript validate_doc_update (median)", validated, "docs/s")
    figure("validated / plain (goal >= 0.5; CouchDB 3.5 here: 0.14)", validated / plain, "x", decimals: 2)
}

/// A view's index and queries (`syncd-bench views index`): `count` documents `{n}` loaded into a
/// database, then `syncd serve` builds `function(doc){ emit(doc.n, 1); }` with `_count` on the
/// first query (docs/s, and the peak memory of syncd and its query servers while it builds), then
/// key-range queries of 100 rows through the listener, map and `group=true`, p50 and p99.
/// CouchDB 3.5 with QuickJS here (shared/notes/views-anchors.md): about 2,800 docs/s; the goals
/// are 30,000 docs/s and a p50 of 2 ms.
func runViewIndexBenchmark(arguments: [String]) async throws {
    let count = option("docs", in: arguments, default: 1_000_000)
    let samples = option("samples", in: arguments, default: 1_000)
    let folder = temporaryDirectory("view-index")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    print("views index: \(count) documents {n}, function (doc) { emit(doc.n, 1); } with _count")
    let loaded = try await loadNumbered(count, into: folder)
    figure("bulk load (store, for scale)", loaded, "docs/s")
    let server = try BenchProcess.serve(data: folder)
    defer { server.stop() }
    let design = JSON.object(["views": ["by_n": ["map": "function (doc) { emit(doc.n, 1); }", "reduce": "_count"]]]).serialized()
    guard try await BenchHTTP.send("PUT", server.url + "/db/_design/bench", body: design) == 201 else { throw BenchError("cannot write the design document") }
    let idle = memoryWithChildren(of: server.pid)
    let peak = PeakMemory(pid: server.pid)
    let begin = now()
    guard try await BenchHTTP.send("GET", server.url + "/db/_design/bench/_view/by_n?limit=1&reduce=false") == 200 else { throw BenchError("the view did not answer") }
    let seconds = now() - begin
    let highest = peak.stop()
    figure("view build", Double(count) / seconds, "docs/s")
    figure("  build time", seconds, "s", decimals: 1)
    figure("  peak memory above idle while building (syncd + query servers)", Double(highest - idle) / 1024, "MB")
    reference("Apache CouchDB 3.5 (QuickJS) here, 100,000 docs", "about 2,800 docs/s (goal >= 30,000)", source: "../shared/notes/views-anchors.md")
    var generator = SystemRandomNumberGenerator()
    for (name, query) in [("100 rows, map", "reduce=false&limit=100"), ("100 rows, group=true", "group=true")] {
        var times: [Double] = []
        for _ in 0..<samples {
            let start = Int.random(in: 0..<(count - 100), using: &generator)
            let url = server.url + "/db/_design/bench/_view/by_n?\(query)&startkey=\(start)&endkey=\(start + 99)"
            let begin = now()
            guard try await BenchHTTP.send("GET", url) == 200 else { throw BenchError("the query answered otherwise") }
            times.append((now() - begin) * 1000)
        }
        figure("key range, \(name): p50", percentile(times, 50), "ms", decimals: 2)
        figure("key range, \(name): p99", percentile(times, 99), "ms", decimals: 2)
    }
}

/// Loads `count` documents `{"_id": "dNNNNNNN", "n": N}` into database `db` of a catalog in `folder`; returns docs/s.
private func loadNumbered(_ count: Int, into folder: String) async throws -> Double {
    let catalog = try Catalog(directory: folder)
    defer { catalog.close() }
    let database = try catalog.create("db")
    let start = now()
    for offset in stride(from: 0, to: count, by: 5_000) {
        let documents = (offset..<min(offset + 5_000, count)).map { index in
            DocumentUpload(["_id": .string(String(format: "d%07d", index)), "n": .number(Double(index))])
        }
        _ = try await database.bulkDocs(documents)
    }
    return Double(count) / (now() - start)
}

/// The resident memory of `pid` and its children (the query servers), in kB.
private func memoryWithChildren(of pid: Int32) -> Int {
    let children = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { entry -> Int32? in
        guard let child = Int32(entry), let status = try? String(contentsOfFile: "/proc/\(entry)/status", encoding: .utf8),
            status.contains("PPid:\t\(pid)\n")
        else { return nil }
        return child
    } ?? []
    return ([pid] + children).map { memory(of: $0, "VmRSS") }.reduce(0, +)
}

/// The highest ``memoryWithChildren(of:)`` seen, sampled every 100 ms until stopped.
private final class PeakMemory: @unchecked Sendable {
    private let lock = NSLock()
    private var highest = 0
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    init(pid: Int32) {
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                let now = memoryWithChildren(of: pid)
                lock.withLock { highest = max(highest, now) }
                Thread.sleep(forTimeInterval: 0.1)
            }
            done.signal()
        }
    }

    func stop() -> Int {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { highest }
    }
}

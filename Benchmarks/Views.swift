import Foundation
import JSON

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

import Foundation
import Store

/// What many conflicting leaves of one document cost: writing them (in one
/// `_bulk_docs` batch, and one per write as a slow peer sends them), reading
/// them all in the store, and `GET ?open_revs=all` from a `syncd serve`
/// process, with that process's peak RSS.
///
/// `--leaves N` (default 1,000, the store's limit; the limit is raised to N).
func runConflictBenchmarks(arguments: [String]) async throws {
    let leaves = option("leaves", in: arguments, default: 1_000)
    let bodyBytes = option("body", in: arguments, default: 100)
    let folder = temporaryDirectory("conflicts")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    var options = Database.Options()
    options.maximumLeaves = max(leaves, options.maximumLeaves)
    print("conflicts: \(leaves) conflicting leaves of one document, bodies of \(bodyBytes) bytes")
    let filler = String(repeating: "c", count: bodyBytes)
    let uploads = (0..<leaves).map { n in
        DocumentUpload(["_id": "doc", "_rev": .string("1-" + String(format: "%032x", n)), "n": .number(Double(n)), "filler": .string(filler)])
    }

    // One batch: what a replicator sends.
    let batchPath = folder + "/batch.sqlite"
    let batch = try Database.open(path: batchPath, options: options)
    var start = now()
    let results = try await batch.bulkDocs(uploads, newEdits: false)
    precondition(results.allSatisfy { (try? $0.result.get()) != nil })
    figure("write \(leaves) leaves in one batch", now() - start, "s", decimals: 3)
    batch.close()

    // One per write: each write reads and rewrites the whole tree.
    let single = try Database.open(path: folder + "/single.sqlite", options: options)
    defer { single.close() }
    var times: [Double] = []
    start = now()
    for upload in uploads {
        let written = now()
        _ = try await single.bulkDocs([upload], newEdits: false)
        times.append(now() - written)
    }
    figure("write \(leaves) leaves one per write", now() - start, "s", decimals: 3)
    let tenth = max(1, leaves / 10)
    figure("  one write, first tenth of the leaves (mean)", times.prefix(tenth).reduce(0, +) / Double(tenth) * 1000, "ms", decimals: 3)
    figure("  one write, last tenth of the leaves (mean)", times.suffix(tenth).reduce(0, +) / Double(tenth) * 1000, "ms", decimals: 3)

    start = now()
    let answers = try single.openRevisions(id: "doc", revisions: nil)
    var bytes = 0
    for case .found(let document) in answers { bytes += document.json([]).serializedBytes().count }
    figure("read and render every leaf in the store", now() - start, "s", decimals: 3)

    // Through the listener, as a peer would ask.
    let data = folder + "/served"
    try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
    for suffix in ["", "-wal", "-shm", ".attachments"] {
        try? FileManager.default.moveItem(atPath: batchPath + suffix, toPath: data + "/db.sqlite" + suffix)
    }
    let server = try BenchProcess.serve(data: data)
    defer { server.stop() }
    let before = memory(of: server.pid, "VmHWM")
    start = now()
    let status = try await BenchHTTP.send("GET", server.url + "/db/doc?open_revs=all")
    guard status == 200 else { throw BenchError("GET open_revs=all answered \(status)") }
    figure("GET ?open_revs=all through syncd serve (\(bytes >> 10) KiB)", now() - start, "s", decimals: 3)
    figure("  syncd serve peak RSS (VmHWM) before the GET", Double(before) / 1024, "MB", decimals: 1)
    figure("  syncd serve peak RSS (VmHWM) after the GET", Double(memory(of: server.pid, "VmHWM")) / 1024, "MB", decimals: 1)
}

import Foundation
import Store
import SyncAgent
import TestBed

/// `attachments [--sizes 256,1024] [--rounds 1] [--before OLD-SYNCD]`: for each size in MiB, two `syncd agent`s on loopback
/// (discovery off, B paired with A by A's invitation). A file of that size is PUT on A as one
/// attachment, streamed by `curl -T` through A's control socket; the time until B serves the
/// document with the same digest and length, and the peak RSS of A and B above their idle RSS
/// (VmRSS sampled every 20 ms, and VmHWM). Then `curl` downloads the same attachment from A's
/// listener (as B, over mutual TLS) to `/dev/null`, and into a file beside B's that it then fsyncs
/// (as B's copy is made durable), for the ratio of the rates to each; last, B's agent stops and
/// `syncd replicate --peer` pulls the same database one-shot, with its own peak RSS. With
/// `--before`, an older build runs the same transfers in alternating rounds.
func runAttachmentBenchmark(arguments: [String]) async throws {
    let sizes = (stringOption("sizes", in: arguments) ?? "256,1024").split(separator: ",").compactMap { Int($0) }
    guard !sizes.isEmpty else { throw BenchError("--sizes takes sizes in MiB, such as 256,1024") }
    let rounds = option("rounds", in: arguments, default: 1)
    let builds = comparedBuilds(this: try TestBed.syncdExecutable, arguments: arguments)
    for round in 0..<rounds {
        for build in round % 2 == 0 ? builds : builds.reversed() {
            let label = builds.count > 1 || rounds > 1 ? "round \(round + 1), \(build.name): " : ""
            for size in sizes { try await attachmentTransfer(mebibytes: size, executable: build.executable, label: label) }
        }
    }
}

/// One run of ``runAttachmentBenchmark(arguments:)`` with a `mebibytes` MiB attachment, with
/// the `syncd` at `executable`; each figure's name starts with `label`.
private func attachmentTransfer(mebibytes: Int, executable: String, label: String) async throws {
    let folder = temporaryDirectory("attachments")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let bytes = mebibytes << 20
    let file = folder + "/video.bin"
    try writeRandomFile(file, mebibytes: mebibytes)
    let configuration = "[listener]\nhost = \"127.0.0.1\"\nport = 0\n[discovery]\nenabled = false\n"
    let a = try await BenchAgent.start(folder + "/a", on: nil, executable: executable, configuration: configuration)
    let b = try await BenchAgent.start(folder + "/b", on: nil, executable: executable, configuration: configuration)
    var bRunning = true
    defer {
        a.stop()
        if bRunning { b.stop() }
    }
    try b.pair(with: try await a.invitation())
    _ = try await a.send(.PUT, "/syncd/hello", body: "{}")
    try await b.waitUntil { try await b.send(.GET, "/syncd/hello").status == 200 }
    try await Task.sleep(for: .seconds(3))
    let idle = (a: memory(of: a.process.pid, "VmRSS"), b: memory(of: b.process.pid, "VmRSS"))
    print("\(label)attachments: one \(mebibytes) MiB attachment PUT on agent A (curl -T, control socket), until on paired agent B (loopback)")

    let sampler = Task { () -> (a: Int, b: Int) in
        var peak = (a: 0, b: 0)
        while !Task.isCancelled {
            peak = (max(peak.a, memory(of: a.process.pid, "VmRSS")), max(peak.b, memory(of: b.process.pid, "VmRSS")))
            try? await Task.sleep(for: .milliseconds(20))
        }
        return peak
    }
    let start = now()
    let upload = try ChildProcess(["/usr/bin/curl", "-sS", "--unix-socket", a.directory + "/control.sock", "-T", file,
                                   "-H", "Content-Type: application/octet-stream", "-H", "Expect:",
                                   "-o", "/dev/null", "-w", "%{http_code}\n", "http://localhost/syncd/blob/video.bin"])
    while upload.isRunning { try await Task.sleep(for: .milliseconds(10)) }
    let putSeconds = now() - start
    // A's peak so far: the upload's (B starts its pull only once the document is written).
    let putPeakA = memory(of: a.process.pid, "VmHWM")
    upload.waitForOutputEnd(timeout: .seconds(2))
    guard upload.exitStatus == 0, upload.lines.last == "201" else {
        sampler.cancel()
        throw BenchError("the PUT on A failed: \(upload.lines) \(upload.errorText)")
    }
    let stub = try await a.send(.GET, "/syncd/blob").json["_attachments"]?["video.bin"]
    guard let digest = stub?["digest"]?.stringValue, stub?["length"]?.intValue == bytes else {
        sampler.cancel()
        throw BenchError("A holds no attachment of \(bytes) bytes: \(String(describing: stub))")
    }
    // Not there in time (or another attachment there): the figures say so, with B's pull's last error.
    var arrived = true
    do {
        try await b.waitUntil(timeout: max(120, Double(mebibytes) / 4)) {
            let answer = try await b.send(.GET, "/syncd/blob")
            guard answer.status == 200 else { return false }
            let held = answer.json["_attachments"]?["video.bin"]
            guard held?["digest"]?.stringValue == digest, held?["length"]?.intValue == bytes else {
                throw BenchError("B holds another attachment: \(String(describing: held)), not \(digest)")
            }
            return true
        }
    } catch {
        arrived = false
        let pull = try? await b.status().replications.first { $0.direction == "pull" }
        print("\(mebibytes) MiB: not on B: \(error); B's pull: \(pull?.state ?? "?"), last error: \(pull?.lastError ?? "none")")
    }
    let onB = arrived ? now() - start : .nan
    try await Task.sleep(for: .milliseconds(200))
    sampler.cancel()
    let sampled = await sampler.value
    let peakA = max(sampled.a, memory(of: a.process.pid, "VmHWM"))
    let peakB = max(sampled.b, memory(of: b.process.pid, "VmHWM"))

    // curl downloading the same bytes from A's listener, authenticated as B (its node certificate):
    // to /dev/null, and into a file beside B's data made durable with fsync, as B's copy is.
    guard let listener = a.process.lines.first(where: { $0.hasPrefix("listening on https://127.0.0.1:") })?
        .dropFirst("listening on ".count) else { throw BenchError("A printed no listener URL: \(a.process.lines)") }
    let url = "\(listener)/syncd/blob/video.bin"
    let curlSeconds = try curlDownload(url, as: b.directory, bytes: bytes, to: "/dev/null")
    let copy = folder + "/curl-copy.bin"
    let curlFileSeconds = try curlDownload(url, as: b.directory, bytes: bytes, to: copy)
    try? FileManager.default.removeItem(atPath: copy)

    // The same pull one-shot by `syncd replicate` in B's data directory, B's agent stopped.
    let aID = try await a.status().node.id
    b.stop()
    bRunning = false
    let pull = try ChildProcess([b.executable, "replicate", "--peer", aID, "\(listener)/syncd", "oneshot",
                                 "--data", b.directory, "--log-level", "warning"])
    var pullPeak = 0
    let pullStart = now()
    while pull.isRunning {
        pullPeak = max(pullPeak, memory(of: pull.pid, "VmHWM"))
        if now() - pullStart > max(120, Double(mebibytes) / 4) { pull.stop() }
        try await Task.sleep(for: .milliseconds(20))
    }
    let pullSeconds = now() - pullStart
    var pulled = pull.exitStatus == 0
    if pulled {
        let catalog = try Catalog(directory: b.directory)
        defer { catalog.close() }
        let attachment = try? catalog.database("oneshot").attachment(documentID: "blob", name: "video.bin")
        pulled = attachment?.digest == digest && attachment?.length == bytes
    }
    if !pulled { print("\(mebibytes) MiB: syncd replicate did not pull the attachment (exit \(pull.exitStatus ?? -1)): \(pull.errorText.suffix(500))") }

    let megabytes = Double(bytes) / 1e6
    let replication = onB - putSeconds
    figure("\(label)\(mebibytes) MiB: PUT on A (curl -T, control socket)", putSeconds, "s", decimals: 2)
    figure("\(label)\(mebibytes) MiB: PUT on A -> readable on B, same digest", onB, "s", decimals: 2)
    figure("\(label)\(mebibytes) MiB: A's PUT answered -> readable on B", replication, "s", decimals: 2)
    figure("\(label)\(mebibytes) MiB: replication A -> B", megabytes / replication, "MB/s", decimals: 1)
    figure("\(label)\(mebibytes) MiB: curl GET of the attachment from A's listener", megabytes / curlSeconds, "MB/s", decimals: 1)
    figure("\(label)\(mebibytes) MiB: replication / curl (goal >= 0.5)", curlSeconds / replication, "x", decimals: 2)
    figure("\(label)\(mebibytes) MiB: curl GET from A's listener into a file + fsync", megabytes / curlFileSeconds, "MB/s", decimals: 1)
    figure("\(label)\(mebibytes) MiB: replication / curl into a file + fsync", curlFileSeconds / replication, "x", decimals: 2)
    figure("\(label)\(mebibytes) MiB: A idle RSS", Double(idle.a) / 1024, "MB", decimals: 1)
    figure("\(label)\(mebibytes) MiB: A peak RSS above idle by the PUT's answer", Double(putPeakA - idle.a) / 1024, "MB", decimals: 1)
    figure("\(label)\(mebibytes) MiB: A peak RSS above idle (goal <= 64)", Double(peakA - idle.a) / 1024, "MB", decimals: 1)
    figure("\(label)\(mebibytes) MiB: B idle RSS", Double(idle.b) / 1024, "MB", decimals: 1)
    figure("\(label)\(mebibytes) MiB: B peak RSS above idle (goal <= 64)", Double(peakB - idle.b) / 1024, "MB", decimals: 1)
    figure("\(label)\(mebibytes) MiB: syncd replicate one-shot pull", pulled ? pullSeconds : .nan, "s", decimals: 2)
    figure("\(label)\(mebibytes) MiB: syncd replicate peak RSS (VmHWM, whole process)", Double(pullPeak) / 1024, "MB", decimals: 1)
}

/// Seconds for `curl` to download the `bytes` bytes at `url` into `output` (curl's own time),
/// as the node whose certificate is in `directory`; for a file, with the time to fsync it after.
private func curlDownload(_ url: String, as directory: String, bytes: Int, to output: String) throws -> Double {
    let download = try runCommand(["/usr/bin/curl", "-sS", "-k", "--cert", directory + "/node-cert.pem",
                                   "--key", directory + "/node-key.pem", "-o", output,
                                   "-w", "%{http_code} %{size_download} %{time_total}\n", url], check: false, timeout: .seconds(1800))
    let fields = download.output.split(whereSeparator: \.isWhitespace)
    guard download.status == 0, fields.count == 3, fields[0] == "200", Int(fields[1]) == bytes, let seconds = Double(fields[2]) else {
        throw BenchError("curl's download from A into \(output) failed: \(download.output) \(download.errorOutput)")
    }
    guard output != "/dev/null" else { return seconds }
    let start = now()
    let descriptor = open(output, O_RDONLY)
    defer { close(descriptor) }
    guard descriptor >= 0, fsync(descriptor) == 0 else { throw BenchError("cannot fsync \(output)") }
    return seconds + now() - start
}

/// Writes `mebibytes` MiB of random bytes to `path`, a MiB at a time (each MiB a random
/// block with its index in its first bytes, so no two are alike).
private func writeRandomFile(_ path: String, mebibytes: Int) throws {
    var generator = SystemRandomNumberGenerator()
    var block = [UInt8](repeating: 0, count: 1 << 20)
    for index in stride(from: 0, to: block.count, by: 8) {
        withUnsafeBytes(of: generator.next() as UInt64) { block.replaceSubrange(index..<index + 8, with: $0) }
    }
    guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
        throw BenchError("cannot write \(path)")
    }
    defer { try? handle.close() }
    for n in 0..<mebibytes {
        withUnsafeBytes(of: UInt64(n)) { block.replaceSubrange(0..<8, with: $0) }
        try handle.write(contentsOf: block)
    }
}

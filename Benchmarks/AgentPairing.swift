import Foundation
import TestBed

/// `agent pairing [--runs 10] [--before OLD-SYNCD]`: two fresh `syncd agent`s on loopback
/// (discovery off), A holding one document; B pairs by `syncd pair URL` run beside its
/// agent. Printed: the pair command (process start to exit), and pairing done (the command
/// has exited, both sides have recorded it) → A's document readable on B. With `--before`,
/// an older build's runs alternate with this one's.
func agentPairing(arguments: [String]) async throws {
    let runs = option("runs", in: arguments, default: 10)
    let builds = comparedBuilds(this: try TestBed.syncdExecutable, arguments: arguments)
    let configuration = "[listener]\nhost = \"127.0.0.1\"\nport = 0\n[discovery]\nenabled = false\n"
    var command: [String: [Double]] = [:]
    var firstDocument: [String: [Double]] = [:]
    for run in 0..<runs {
        for build in run % 2 == 0 ? builds : builds.reversed() {
            let folder = temporaryDirectory("agent-pairing-\(run)")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let a = try await BenchAgent.start(folder + "/a", on: nil, executable: build.executable, configuration: configuration)
            let b = try await BenchAgent.start(folder + "/b", on: nil, executable: build.executable, configuration: configuration)
            defer { a.stop(); b.stop() }
            _ = try await a.send(.PUT, "/syncd/hello", body: "{}")
            let invitation = try await a.invitation()
            let start = now()
            try b.pair(with: invitation)
            let paired = now()
            try await b.waitUntil { try await b.send(.GET, "/syncd/hello").status == 200 }
            command[build.name, default: []].append(paired - start)
            firstDocument[build.name, default: []].append(now() - paired)
        }
    }
    print("two syncd agents on loopback, \(runs) runs per build")
    for build in builds {
        let (command, firstDocument) = (command[build.name] ?? [], firstDocument[build.name] ?? [])
        figure("\(build.name): syncd pair URL (start to exit), median", percentile(command, 50) * 1000, "ms", decimals: 1)
        figure("\(build.name): paired -> first doc, median (goal <= 100)", percentile(firstDocument, 50) * 1000, "ms", decimals: 1)
        figure("\(build.name): paired -> first doc, max", (firstDocument.max() ?? .nan) * 1000, "ms", decimals: 1)
    }
}

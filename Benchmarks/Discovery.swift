import Discovery
import Foundation
import TestBed

/// Times discovery between two test-bed hosts, through the real `syncd` command line:
/// from A registering its service until B's peer-appeared event, and from A's address
/// change until B's peer-changed event. Prints the figures; asserts nothing.
func runDiscoveryBenchmark() async throws {
    let runs = 5
    let syncd = try TestBed.syncdExecutable
    var appear: [Double] = []
    var change: [Double] = []
    try await TestBed.with(hosts: 2) { bed in
        let (a, b) = (bed["a"], bed["b"])
        let watcher = try b.spawn([syncd, "browse", "--watch", "--json"])
        for run in 0..<runs {
            let uuid = UUID().uuidString.lowercased()
            let advertiser = try a.spawn([
                syncd, "advertise", "--json", "--uuid", uuid, "--port", String(7000 + run), "--database", "bench", "--name", "bench \(run)",
            ])
            let registering = try await advertiser.waitForLine(timeout: .seconds(10)) { $0.contains("\"registering\"") }
            let (seenAt, seen) = try await watcher.waitForLine(timeout: .seconds(10)) {
                $0.contains("\"appeared\"") && $0.contains(uuid)
            }
            appear.append(try time(seen) - time(registering.line))

            let address = "10.213.0.\(100 + run)"
            let changedAt = Date().timeIntervalSince1970
            try a.setIPv4(address)
            let (_, changed) = try await watcher.waitForLine(from: seenAt + 1, timeout: .seconds(15)) {
                $0.contains("\"changed\"") && $0.contains(uuid) && $0.contains("\"\(address)\"")
            }
            change.append(try time(changed) - changedAt)
            advertiser.stop()
            _ = try await watcher.waitForLine(from: seenAt + 1, timeout: .seconds(10)) { $0.contains("\"gone\"") && $0.contains(uuid) }
        }
    }
    print("discovery: A registers -> B peer appeared (\(runs) runs): \(summary(appear))")
    print("discovery: A address change -> B peer changed (\(runs) runs): \(summary(change))")
}

private func time(_ jsonLine: String) throws -> Double {
    let object = try JSONSerialization.jsonObject(with: Data(jsonLine.utf8)) as? [String: Any]
    guard let time = object?["time"] as? Double else { throw TestBedError.timedOut("no time in \(jsonLine)") }
    return time
}

private func summary(_ seconds: [Double]) -> String {
    let sorted = seconds.sorted()
    func format(_ value: Double) -> String { String(format: "%.2f s", value) }
    return "min \(format(sorted.first ?? 0)), median \(format(sorted[sorted.count / 2])), max \(format(sorted.last ?? 0)); all: "
        + seconds.map(format).joined(separator: ", ")
}

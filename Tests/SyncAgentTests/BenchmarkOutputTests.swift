import Foundation
import Testing

/// The replication benchmarks print what they measured in the run; a figure
/// from elsewhere appears only as a labelled reference with its source, never
/// inside a ratio. (Small runs: the figures themselves are not checked.)
@Suite struct BenchmarkOutputTests {
    @Test(arguments: [["throughput", "--docs", "300"], ["latency", "--samples", "3"]])
    func referenceFiguresAreLabelledAndNeverDividedInto(_ arguments: [String]) async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-bench-output")
        defer { directory.remove() }
        let bench = URL(fileURLWithPath: ServeProcess.executable).deletingLastPathComponent().appendingPathComponent("syncd-bench").path
        let run = try SyncdRun(["replication"] + arguments, executable: bench, in: directory.path)
        #expect(await run.finish() == 0, "\(run.errors)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("docs/s") || $0.contains(" ms") }, "no figures printed: \(run.output)")
        let references = lines.filter { $0.contains("CouchDB") || $0.contains("PouchDB") }
        #expect(!references.isEmpty, "the reference figure is not printed: \(run.output)")
        let source = "(../shared/notes/replication-anchors.md)"
        for line in references {
            #expect(line.hasPrefix("reference, not measured here: "), "\(line)")
            #expect(line.hasSuffix(source), "\(line)")
            #expect(!line.contains(" / "), "a ratio: \(line)")
        }
    }
}

// syncd-bench: benchmarks that print figures. Run with a release build:
//   swift run -c release syncd-bench store [--docs 100000]
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "store":
    try await runStoreBenchmarks(arguments: Array(arguments.dropFirst()))
default:
    print("""
        usage: syncd-bench store [--docs N]
        """)
    exit(arguments.isEmpty ? 0 : 2)
}

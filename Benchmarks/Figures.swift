import Foundation

/// Seconds since an arbitrary start, monotonic.
func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// The value of `--name N` in `arguments`, or `fallback`.
func option(_ name: String, in arguments: [String], default fallback: Int) -> Int {
    guard let index = arguments.firstIndex(of: "--\(name)"), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else {
        return fallback
    }
    return value
}

/// The p-th percentile (0...100) of `samples`.
func percentile(_ samples: [Double], _ p: Double) -> Double {
    guard !samples.isEmpty else { return .nan }
    let sorted = samples.sorted()
    return sorted[min(sorted.count - 1, Int((p / 100) * Double(sorted.count - 1) + 0.5))]
}

/// The median: the middle sample, or the mean of the middle two when the count is even
/// (`percentile(_, 50)` takes the higher of two).
func median(_ samples: [Double]) -> Double {
    guard !samples.isEmpty else { return .nan }
    let sorted = samples.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Prints one figure as `name: value unit`, aligned.
func figure(_ name: String, _ value: Double, _ unit: String, decimals: Int = 0) {
    print(name.padding(toLength: 58, withPad: " ", startingAt: 0) + String(format: "%12.\(decimals)f %@", value, unit))
}

/// Where the reference replicators' figures come from: measured elsewhere, never in this run.
let referenceSource = "../shared/notes/replication-anchors.md"

/// Prints a figure measured elsewhere, for scale only: labelled as such, with its
/// source, and never divided into a figure of this run.
func reference(_ name: String, _ value: String, source: String = referenceSource) {
    print("reference, not measured here: \(name): \(value) (\(source))")
}

/// A fresh temporary directory.
func temporaryDirectory(_ label: String) -> String {
    let path = NSTemporaryDirectory() + "syncd-bench-\(label)-" + UUID().uuidString
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A small document body of about 200 bytes, like the anchors' test data.
func smallDocument(_ index: Int) -> String {
    #"{"_id":"doc-\#(String(format: "%08d", index))","type":"reading","sensor":"sensor-\#(index % 97)","value":\#(Double(index % 1000) / 10),"unit":"celsius","tags":["lab","floor-\#(index % 7)"],"note":"benchmark document number \#(index) for syncd","site":"north-wing"}"#
}

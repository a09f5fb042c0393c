extension Duration {
    /// The duration in whole milliseconds, rounded down.
    var wholeMilliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }

    /// As errors and logs say a limit: in seconds when whole (`25 s`), else in milliseconds (`500 ms`).
    var spoken: String {
        let milliseconds = wholeMilliseconds
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }
}

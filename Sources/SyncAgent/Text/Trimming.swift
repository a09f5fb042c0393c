extension StringProtocol {
    /// The text without the white space at either end: spaces and tabs (what separates
    /// the parts of an HTTP header), and line ends too when `newlines` (a file of one line).
    public func trimmingWhitespace(newlines: Bool = false) -> String {
        trimming { $0.isWhitespace && (newlines || !$0.isNewline) }
    }

    /// The text without the characters at either end for which `trimmed` holds.
    public func trimming(_ trimmed: (Character) -> Bool) -> String {
        guard let first = firstIndex(where: { !trimmed($0) }), let last = lastIndex(where: { !trimmed($0) }) else { return "" }
        return String(self[first...last])
    }
}

extension QRCode {
    /// How dark modules are drawn in a terminal.
    public enum TerminalStyle: String, Sendable, Hashable, CaseIterable {
        /// Black on white set with ANSI colours, so it scans on dark and light themes alike.
        case ansi
        /// No colours, dark modules drawn as blocks: right on light themes (dark text).
        case plain
        /// No colours, light modules drawn as blocks: right on dark themes (light text).
        case inverse
    }

    /// The symbol as text, two module rows per line with Unicode half blocks and a `quietZone`
    /// of light modules around it (4 per the standard): a 120-character URL takes 53 columns.
    public func terminalText(style: TerminalStyle = .ansi, quietZone: Int = 4) -> String {
        let range = -quietZone..<(size + quietZone)
        var lines: [String] = []
        for y in stride(from: range.lowerBound, to: range.upperBound, by: 2) {
            var line = style == .ansi ? Self.blackOnWhite : ""
            for x in range {
                let top = isDark(x: x, y: y)
                let bottom = y + 1 < range.upperBound && isDark(x: x, y: y + 1)
                // A glyph's ink is the dark part, except in inverse style where ink is light.
                let (inkTop, inkBottom) = style == .inverse ? (!top, !bottom && y + 1 < range.upperBound) : (top, bottom)
                line.append(Self.halfBlock(top: inkTop, bottom: inkBottom))
            }
            if style == .ansi { line += Self.reset }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    static let blackOnWhite = "\u{1B}[38;5;16;48;5;231m"
    static let reset = "\u{1B}[0m"

    static func halfBlock(top: Bool, bottom: Bool) -> Character {
        switch (top, bottom) {
        case (true, true): "█"
        case (true, false): "▀"
        case (false, true): "▄"
        case (false, false): " "
        }
    }
}

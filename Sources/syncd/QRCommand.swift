import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import QRCode
import SyncAgent

/// Shows a text (an endpoint URL) as a QR code in the terminal, and optionally writes it to a file.
struct QRCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "qr",
        abstract: "Print TEXT (e.g. an endpoint URL) as a QR code; --output also writes a PNG, PGM or SVG file."
    )

    /// How to draw the code in the terminal.
    enum Style: String, ExpressibleByArgument, CaseIterable {
        case auto, ansi, plain, inverse
    }

    @Argument(help: "The text to encode.")
    var text: String

    @Option(help: "Also write the code to FILE; the extension picks the format: .png, .pgm or .svg.")
    var output: String?

    @Option(help: "auto (colours on a terminal), ansi (black on white), plain (for light themes), inverse (for dark themes).")
    var style = Style.auto

    func validate() throws {
        if let output, Self.format(of: output) == nil {
            throw ValidationError("--output must end in .png, .pgm or .svg")
        }
    }

    func run() async throws {
        let code = try QRCode(text)
        let terminalStyle: QRCode.TerminalStyle = switch style {
        case .auto: isatty(STDOUT_FILENO) != 0 ? .ansi : .plain
        case .ansi: .ansi
        case .plain: .plain
        case .inverse: .inverse
        }
        print(code.terminalText(style: terminalStyle))
        var size = winsize()
        if isatty(STDOUT_FILENO) != 0, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, Int(size.ws_col) < code.size + 8 {
            StandardStream.error.write("warning: the code is \(code.size + 8) columns wide; the terminal has \(size.ws_col)\n")
        }
        if let output {
            let bytes: [UInt8] = switch Self.format(of: output) {
            case "png": code.png()
            case "pgm": code.pgm()
            default: Array(code.svg().utf8)
            }
            try Data(bytes).write(to: URL(fileURLWithPath: output))
        }
    }

    private static func format(of path: String) -> String? {
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        return ["png", "pgm", "svg"].contains(ext) ? ext : nil
    }
}

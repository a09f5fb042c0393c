import CQREncode
import Glibc

/// A QR code symbol for a short text such as a listener's endpoint URL, made with
/// libqrencode, so another machine can pair by scanning the terminal.
///
/// ```swift
/// let code = try QRCode("https://10.0.0.2:5984/?fp=…")
/// print(code.terminalText())
/// try code.png().write(to: url)
/// ```
public struct QRCode: Sendable, Hashable {
    /// How much of the symbol may be damaged and still decode; more costs size.
    public enum Correction: Sendable, Hashable {
        /// About 7 % recoverable.
        case low
        /// About 15 % recoverable: the default, enough for screens.
        case medium
        /// About 25 % recoverable.
        case quartile
        /// About 30 % recoverable.
        case high

        var level: QRecLevel {
            switch self {
            case .low: QR_ECLEVEL_L
            case .medium: QR_ECLEVEL_M
            case .quartile: QR_ECLEVEL_Q
            case .high: QR_ECLEVEL_H
            }
        }
    }

    /// The number of modules on each side (21 for version 1, up to 177).
    public let size: Int
    /// The text the symbol encodes.
    public let text: String
    private let modules: [Bool]

    /// Encodes `text` (as UTF-8) at the smallest version that holds it.
    public init(_ text: String, correction: Correction = .medium) throws(QRCodeError) {
        guard !text.utf8.contains(0) else { throw .containsNUL }
        guard let code = QRcode_encodeString(text, 0, correction.level, QR_MODE_8, 1) else {
            throw errno == ERANGE ? .tooLong(text.utf8.count) : .encodingFailed(String(cString: strerror(errno)))
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        // Bit 0 of each byte is a dark module; the other bits are libqrencode's bookkeeping.
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        self.size = width
        self.text = text
        self.modules = data.map { $0 & 1 == 1 }
    }

    /// Whether the module at column `x`, row `y` is dark; outside the symbol (the quiet zone) is light.
    public func isDark(x: Int, y: Int) -> Bool {
        guard (0..<size).contains(x), (0..<size).contains(y) else { return false }
        return modules[y * size + x]
    }
}

/// Why a text could not become a QR code, or an image could not be read.
public enum QRCodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The text holds a NUL character, which libqrencode's string API cannot carry.
    case containsNUL
    /// The text (this many UTF-8 bytes) does not fit even the largest QR code.
    case tooLong(Int)
    /// libqrencode failed for another reason.
    case encodingFailed(String)
    /// An image could not be read or scanned.
    case decodingFailed(String)

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .containsNUL: "the text contains a NUL character"
        case .tooLong(let bytes): "the text (\(bytes) bytes) is too long for a QR code"
        case .encodingFailed(let reason): "QR encoding failed: \(reason)"
        case .decodingFailed(let reason): reason
        }
    }
}

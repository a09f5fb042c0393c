import Foundation
import QRCode
import TestBed
import Testing

/// QR codes decode, with an independent decoder (zbarimg), to the exact text.
struct QRCodeTests {
    /// Pairing invitations as `syncd pair` and `syncd agent` put them in their QR codes:
    /// `InvitationURL.codeText` (Sources/SyncAgent/Pairing/InvitationURL.swift),
    /// `HTTPS://HOST:PORT/[DATABASES]#ID-SECRET` with the node ID (52 characters) and the
    /// secret (26) in upper-case base32.
    static let invitations = [
        // An IPv4 address and the default database (the README's example).
        "HTTPS://192.168.1.20:6984/#XM4JWCCHXTL2XUD56GYB4HKOQAIPS564I3LSLEXFKN4XS3BDQGPA-QBUQ4RKZ3MHT2NXW7VDEALPJGE",
        // A global IPv6 address and two databases.
        "HTTPS://[2001:db8:85a3:1:5054:ff:fe12:3456]:6984/notes,photos#XM4JWCCHXTL2XUD56GYB4HKOQAIPS564I3LSLEXFKN4XS3BDQGPA-QBUQ4RKZ3MHT2NXW7VDEALPJGE",
    ]
    /// The usual invitation.
    static let url = invitations[0]

    @Test func invitationsHaveTheirRealLengths() {
        #expect(Self.invitations.map(\.count) == [106, 141])
    }

    @Test(arguments: ["png", "pgm", "svg"], invitations)
    func imageFileDecodes(format: String, url: String) throws {
        let code = try QRCode(url)
        let bytes: [UInt8] = switch format {
        case "png": code.png()
        case "pgm": code.pgm()
        default: Array(code.svg().utf8)
        }
        #expect(try decode(bytes, extension: format) == url)
    }

    @Test(arguments: QRCode.TerminalStyle.allCases, invitations)
    func terminalTextDecodesAndFits80Columns(style: QRCode.TerminalStyle, url: String) throws {
        let code = try QRCode(url)
        let text = code.terminalText(style: style)
        let lines = text.split(separator: "\n").map { Self.stripANSI(String($0)) }
        #expect(lines.allSatisfy { $0.count == code.size + 8 })
        #expect(lines.allSatisfy { $0.count <= 80 }, "must fit an 80-column terminal")
        #expect(lines.count == (code.size + 8 + 1) / 2, "two module rows per line")
        if style == .ansi { #expect(text.contains("\u{1B}[38;5;16;48;5;231m"), "explicit black on white") }
        #expect(try decode(Self.pixels(fromTerminal: lines, inkIsDark: style != .inverse), extension: "pgm") == url)
    }

    @Test func syncdQRCommandPrintsAndWritesFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for format in ["png", "svg"] {
            let file = directory.appendingPathComponent("code.\(format)").path
            let result = try runCommand([try TestBed.syncdExecutable, "qr", Self.url, "--output", file, "--style", "plain"])
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(try decode(Self.pixels(fromTerminal: lines, inkIsDark: true), extension: "pgm") == Self.url)
            #expect(try decode(Array(Data(contentsOf: URL(fileURLWithPath: file))), extension: format) == Self.url)
        }
        let bad = try runCommand([try TestBed.syncdExecutable, "qr", "x", "--output", directory.appendingPathComponent("x.gif").path], check: false)
        #expect(bad.status != 0)
    }

    @Test func tooLongTextIsRejected() {
        #expect(throws: QRCodeError.tooLong(8000)) { try QRCode(String(repeating: "x", count: 8000)) }
        #expect(throws: QRCodeError.containsNUL) { try QRCode("a\u{0}b") }
    }

    // MARK: Helpers

    /// Decodes an image with zbarimg and returns the text it found.
    func decode(_ image: [UInt8], extension ext: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).\(ext)").path
        try Data(image).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try runCommand(["/usr/bin/zbarimg", "--nodbus", "--raw", "-q", path], check: false)
        return result.output
    }

    static func stripANSI(_ line: String) -> String {
        line.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
    }

    /// Paints terminal half-block text back into a PGM: 6 pixels per module, white margin around.
    static func pixels(fromTerminal lines: [String], inkIsDark: Bool) -> [UInt8] {
        let scale = 6, margin = 24
        let width = (lines.map(\.count).max() ?? 0) * scale + 2 * margin
        let height = lines.count * 2 * scale + 2 * margin
        var pixels = [UInt8](repeating: 255, count: width * height)
        for (row, line) in lines.enumerated() {
            for (column, character) in line.enumerated() {
                let ink: (top: Bool, bottom: Bool) = switch character {
                case "█": (true, true)
                case "▀": (true, false)
                case "▄": (false, true)
                default: (false, false)
                }
                for (half, inked) in [ink.top, ink.bottom].enumerated() where inked == inkIsDark {
                    for dy in 0..<scale {
                        let y = margin + (row * 2 + half) * scale + dy
                        for dx in 0..<scale { pixels[y * width + margin + column * scale + dx] = 0 }
                    }
                }
            }
        }
        return Array("P5\n\(width) \(height)\n255\n".utf8) + pixels
    }
}

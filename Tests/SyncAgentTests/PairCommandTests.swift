@testable import QRCode
import Store
import SyncAgent
import Foundation
import TestBed
import XCTest

/// `syncd pair`, `syncd peers`, `syncd id` as a user runs them: one machine
/// prints an invitation, the other joins with the URL or with a picture of the code.
final class PairCommandTests: XCTestCase {
    func testPairingFromThePrintedURLAndFromAnImageOfTheTerminalCode() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-pair-cli")
        defer { directory.remove() }
        let (a, b, c) = (directory.path + "/a", directory.path + "/b", directory.path + "/c")
        func invite() async throws -> (run: SyncdRun, url: String, code: [String]) {
            let run = try SyncdRun(["pair", "--data", a, "--address", "127.0.0.1", "--port", "0", "--database", "notes",
                                    "--name", "alpha", "--expires", "2m"], in: directory.path)
            let printed = await run.waitForOutput("expires in 2m")
            XCTAssertTrue(printed, run.output + run.errors)
            let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let urlLine = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("https://127.0.0.1:") }, run.output)
            return (run, lines[urlLine], Array(lines[..<urlLine]))
        }

        let first = try await invite()
        XCTAssertTrue(first.url.contains("/notes#"), first.url)
        XCTAssertTrue(first.run.output.contains("Scan the code on the other machine, or run there: syncd pair '\(first.url)'"))
        let join = try SyncdCommand.run(["pair", first.url, "--data", b, "--name", "bravo"])
        XCTAssertEqual(join.status, 0, join.error)
        let aID = try XCTUnwrap(Self.field("ID", in: try SyncdCommand.run(["id", "--data", a]).output))
        let bID = try XCTUnwrap(Self.field("ID", in: try SyncdCommand.run(["id", "--data", b]).output))
        // No agent runs on B: the command says that syncing needs one.
        XCTAssertEqual(join.output, "paired with alpha (\(aID)), sharing notes\nno agent runs here: start one (syncd agent, or systemctl start syncd) to sync\n")
        let firstStatus = await first.run.finish()
        XCTAssertEqual(firstStatus, 0, first.run.errors)
        XCTAssertTrue(first.run.output.hasSuffix("paired with bravo (\(bID))\n"), first.run.output)
        XCTAssertTrue(try SyncdCommand.run(["peers", "--data", a]).output.contains("bravo\n  ID          \(bID)\n"))
        XCTAssertTrue(try SyncdCommand.run(["peers", "--data", b]).output.contains("alpha\n  ID          \(aID)\n"))

        // The QR code as the terminal showed it, painted into a PNG, joins too.
        let second = try await invite()
        // While it waits, the first invitation (at the new port) is refused: it was used.
        let secondPort = try XCTUnwrap(URLComponents(string: second.url)?.port)
        var reused = try XCTUnwrap(URLComponents(string: first.url))
        reused.port = secondPort
        let again = try SyncdCommand.run(["pair", try XCTUnwrap(reused.string), "--data", c])
        XCTAssertEqual(again.status, 1)
        XCTAssertEqual(again.error, "error: pairing refused: the invitation was already used\n")
        // A code small enough for a phone to focus on at a normal font size: QR version 6 or below.
        let modules = (second.code.map(\.count).max() ?? 0) - 8  // less the quiet zone, 4 each side
        print("the invitation's QR code: \(modules) modules, \(second.code.count) terminal lines, for \(second.url.count) characters")
        XCTAssertLessThanOrEqual(modules, 41, second.code.joined(separator: "\n"))
        let image = directory.path + "/code.png"
        try Data(Self.paint(second.code)).write(to: URL(fileURLWithPath: image))
        // zbarimg reads it as the URL in capitals (the code's alphanumeric mode), which pairs as well.
        let zbar = try runCommand(["/usr/bin/zbarimg", "--raw", "-q", image])
        XCTAssertEqual(zbar.output.trimmingCharacters(in: .newlines), try InvitationURL(second.url).codeText)
        let fromImage = try SyncdCommand.run(["pair", "--image", image, "--data", c, "--name", "charlie"])
        XCTAssertEqual(fromImage.status, 0, fromImage.error)
        XCTAssertTrue(fromImage.output.hasPrefix("paired with alpha ("), fromImage.output)
        let secondStatus = await second.run.finish()
        XCTAssertEqual(secondStatus, 0)

        let removed = try SyncdCommand.run(["peers", "remove", "charlie", "--data", a])
        XCTAssertEqual(removed.status, 0, removed.error)
        XCTAssertTrue(removed.output.hasPrefix("removed charlie ("))
        let left = try SyncdCommand.run(["peers", "--data", a]).output
        XCTAssertTrue(left.contains("bravo") && !left.contains("charlie"), left)
        XCTAssertEqual(try SyncdCommand.run(["peers", "remove", "nobody", "--data", a]).status, 1)

        let notAnImage = directory.path + "/not.png"
        try Data("hello".utf8).write(to: URL(fileURLWithPath: notAnImage))
        let unreadable = try SyncdCommand.run(["pair", "--image", notAnImage, "--data", c])
        XCTAssertNotEqual(unreadable.status, 0)
        XCTAssertTrue(unreadable.error.contains("cannot read the image"), unreadable.error)

        XCTAssertEqual(try SyncdCommand.run(["--version"]).output, "\(SyncdVersion.current)\n")
    }

    /// With `syncd serve --tls` running on the data directory, `syncd pair` leaves
    /// the serving to it: the invitation goes to the directory, and the running
    /// listener accepts it.
    func testPairingThroughARunningListener() async throws {
        let directory = try TemporaryDirectory(prefix: "syncd-pair-serve")
        defer { directory.remove() }
        let (a, b) = (directory.path + "/a", directory.path + "/b")
        let serve = try await ServeProcess.start(["--data", a, "--port", "0", "--tls"])
        let port = try XCTUnwrap(URLComponents(string: serve.url)?.port)
        let id = try SyncdCommand.run(["id", "--data", a]).output
        XCTAssertTrue(id.contains("URLs    https://127.0.0.1:\(port)"), id)
        let invite = try SyncdRun(["pair", "--data", a, "--address", "127.0.0.1", "--database", "notes"], in: directory.path)
        let printed = await invite.waitForOutput("expires in 10m")
        XCTAssertTrue(printed, invite.output + invite.errors)
        let url = try XCTUnwrap(invite.output.split(separator: "\n").first { $0.hasPrefix("https://") }.map(String.init))
        XCTAssertTrue(url.hasPrefix("https://127.0.0.1:\(port)/notes#"), url)
        let join = try SyncdCommand.run(["pair", url, "--data", b])
        XCTAssertEqual(join.status, 0, join.error)
        let inviteStatus = await invite.finish()
        XCTAssertEqual(inviteStatus, 0, invite.errors)
        XCTAssertTrue(invite.output.contains("paired with "), invite.output)

        // B replicates with A as a peer: its certificate, no password, both ways.
        do {
            let catalog = try Catalog(directory: b)
            let notes = try catalog.openOrCreate("notes")
            for n in 0..<3 { _ = try await notes.put(["_id": .string("b\(n)")]) }
            catalog.close()
        }
        let aID = try XCTUnwrap(Self.field("ID", in: id))
        let push = try SyncdCommand.run(["replicate", "notes", url.components(separatedBy: "#")[0], "--peer", aID, "--data", b])
        XCTAssertEqual(push.status, 0, push.output + push.error)
        XCTAssertEqual(push.output.split(separator: "\n").last, "stopped: 3/3 changes, read 3, written 3")
        let pull = try SyncdCommand.run(["replicate", url.components(separatedBy: "#")[0], "copy", "--peer", aID, "--data", b])
        XCTAssertEqual(pull.status, 0, pull.output + pull.error)
        XCTAssertEqual(pull.output.split(separator: "\n").last, "stopped: 3/3 changes, read 3, written 3")
        let anonymous = try SyncdCommand.run(["replicate", url.components(separatedBy: "#")[0], "copy2",
                                              "--fingerprint", aID, "--data", b])
        XCTAssertNotEqual(anonymous.status, 0, "without its certificate, B is anonymous and refused")
        let stopped = await serve.stop()
        XCTAssertEqual(stopped, 0)
    }

    /// The value after `name` in `syncd id`'s output.
    static func field(_ name: String, in text: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.map { String($0.dropFirst(name.count)).trimmingCharacters(in: .whitespaces) }
    }

    /// Half-block terminal art (two module rows per line) as a PNG, 6 pixels per module.
    static func paint(_ lines: [String]) -> [UInt8] {
        let scale = 6
        let width = (lines.map(\.count).max() ?? 0) * scale
        let height = lines.count * 2 * scale
        var pixels = [UInt8](repeating: 255, count: width * height)
        for (row, line) in lines.enumerated() {
            for (column, glyph) in line.enumerated() {
                let (top, bottom) = switch glyph {
                case "█": (true, true)
                case "▀": (true, false)
                case "▄": (false, true)
                default: (false, false)
                }
                for (half, dark) in [(0, top), (1, bottom)] where dark {
                    for y in 0..<scale {
                        let start = ((row * 2 + half) * scale + y) * width + column * scale
                        for x in 0..<scale { pixels[start + x] = 0 }
                    }
                }
            }
        }
        return PNG.grayscale(width: width, height: height, pixels: pixels)
    }
}

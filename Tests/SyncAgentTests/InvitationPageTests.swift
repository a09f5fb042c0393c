import Foundation
import TestBed
import XCTest

@testable import SyncAgent

/// What a phone gets when it scans an invitation's QR code and opens the URL in
/// its browser: a page with the exact `syncd pair` command, built in the page from
/// the fragment the server never sees; served only while an invitation is open.
final class InvitationPageTests: XCTestCase {
    func testABrowserGetsThePageOnlyWhileAnInvitationIsOpenAndOnlyWithoutCredentials() async throws {
        let server = try await startListener(configure: { $0.tls = true })
        let client = try PeerClient(to: server)
        addTeardownBlock { await client.shutdown() }
        let html = [("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")]

        // No invitation open: a browser at the default invitation's address is told so, and how to get one.
        let closed = try await HTTP.request(.GET, server.anonymousURL + "/", headers: html, client: client.client)
        XCTAssertEqual(closed.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertTrue(closed.text.contains("has been used, cancelled or\nhas expired. For a new one, run <code>syncd pair</code>"), closed.text)
        XCTAssertTrue(closed.header("Content-Security-Policy")?.hasPrefix("default-src 'none';") == true)

        let invitation = try server.invite(["syncd"])
        let page = try await HTTP.request(.GET, server.anonymousURL + "/", headers: html, client: client.client)
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertTrue(page.header("Content-Security-Policy")?.hasPrefix("default-src 'none';") == true)
        XCTAssertEqual(page.header("Cache-Control"), "no-store")
        XCTAssertTrue(page.text.contains(server.listener.node.identity.id.description), page.text)
        XCTAssertFalse(page.text.contains(invitation.secret.uppercased()) || page.text.contains(invitation.secret))
        XCTAssertFalse(page.text.contains("src=") || page.text.contains("href="), "the page loads nothing")

        // An API client, a user with credentials, or another path gets the API.
        let api = try await HTTP.request(.GET, server.anonymousURL + "/", client: client.client)
        XCTAssertEqual(api.json["couchdb"]?.stringValue, "Welcome")
        let user = try await HTTP.request(.GET, server.url + "/", headers: html, client: client.client)
        XCTAssertEqual(user.json["couchdb"]?.stringValue, "Welcome")
        let other = try await HTTP.request(.GET, server.anonymousURL + "/notes", headers: html, client: client.client)
        XCTAssertEqual(other.status, 401)

        // Used, the invitation's page is gone.
        let joiner = try await startListener(configure: { $0.tls = true })
        _ = try await joiner.join(invitation)
        let used = try await HTTP.request(.GET, server.anonymousURL + "/", headers: html, client: client.client)
        XCTAssertEqual(used.text, closed.text)
    }

    func testTheNodeNameIsEscaped() {
        let page = InvitationPage.html(name: #"<script>alert("x")</script>"#, id: NodeID(String(repeating: "A", count: 52))!)
        XCTAssertFalse(page.contains("<script>alert"))
        XCTAssertTrue(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"))
    }

    /// Debian's Chromium, headless, in a network namespace with the listener of a
    /// waiting `syncd pair`: the command in the page is the invitation URL.
    func testInARealBrowserTheCommandIsTheInvitationURL() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("browser/invitation-page.sh").path
        let out = try TemporaryDirectory(prefix: "invitation-page")
        defer { out.remove() }
        let run = try runCommand(["/usr/bin/unshare", "--net", "bash", script, try TestBed.syncdExecutable, out.path],
                                 check: false, timeout: .seconds(180))
        let read = { (name: String) in (try? String(contentsOfFile: out.path + "/" + name, encoding: .utf8)) ?? "" }
        XCTAssertEqual(run.status, 0, run.output + run.errorOutput + read("pair.out") + read("browser.err"))
        let url = read("url")
        XCTAssertTrue(url.hasPrefix("https://127.0.0.1:"), url)
        XCTAssertEqual(read("command").trimmingCharacters(in: .newlines), "syncd pair '\(url)'", read("dom.html"))
        XCTAssertTrue(read("dom.html").contains("kitchen &lt;&amp;&gt;"), read("dom.html"))
        // A link to the real node with a shell command in its fragment gets no command to copy.
        XCTAssertEqual(read("crafted-command").trimmingCharacters(in: .newlines),
                       "This address is not a complete syncd invitation: scan the code again.", read("crafted.html"))
        let png = try Data(contentsOf: URL(fileURLWithPath: out.path + "/page.png"))
        XCTAssertEqual(Array(png.prefix(8)), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "a PNG screenshot")
        XCTAssertGreaterThan(png.count, 10_000, "the screenshot shows a page")
    }
}

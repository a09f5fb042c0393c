import FoundationEssentials
import HTTPTypes
import Hummingbird

/// What a phone shows after scanning an invitation's QR code: it opens the URL in
/// its browser, which asks for HTML with no credentials. While an invitation to
/// the databases the path names is open, that request gets a small page saying
/// what this is, which machine invites, and the exact `syncd pair '…'` command
/// with a copy button. The command is built in the page from its own address, and
/// only from one that is an invitation's characters (no quote can reach the shell):
/// the fragment (and so the secret) never reaches the server, and the page loads
/// nothing and sends nothing anywhere (its Content-Security-Policy forbids it).
/// While none is open, such a request for `/` (the default invitation's address) gets
/// a page saying so and how to get a new one, not the API's JSON welcome.
/// Every other request goes on to the CouchDB API.
struct InvitationPageMiddleware: MiddlewareProtocol {
    typealias Input = Request
    typealias Output = Response
    typealias Context = ListenerContext

    let listener: Listener

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method == .get || request.method == .head,
              request.headers[.accept]?.contains("text/html") == true,
              request.headers[.authorization] == nil, request.headers[.cookie] == nil,
              let databases = Self.databases(inPath: request.uri.path),
              let invitations = try? listener.node.invitations.all()
        else { return try await next(request, context) }
        let (name, id) = (listener.node.name, listener.node.identity.id)
        if invitations.contains(where: { $0.isOpen() && $0.databases == databases }) {
            return Self.page(InvitationPage.html(name: name, id: id))
        }
        guard databases == [InvitationURL.defaultDatabase], request.uri.path.drop(while: { $0 == "/" }).isEmpty else {
            return try await next(request, context)
        }
        return Self.page(InvitationPage.closed(name: name))
    }

    private static func page(_ html: String) -> Response {
        CouchResponder.bytesResponse(Array(html.utf8), headers: InvitationPage.headers, contentType: "text/html; charset=utf-8")
    }

    /// The databases an invitation URL's path names: none is the default database.
    static func databases(inPath path: String) -> [String]? {
        let names = path.drop { $0 == "/" }
        if names.isEmpty { return [InvitationURL.defaultDatabase] }
        guard !names.contains("/") else { return nil }
        let listed = names.split(separator: ",", omittingEmptySubsequences: false).map { PathEncoding.decode($0) ?? "" }
        return listed.contains(where: \.isEmpty) ? nil : listed
    }
}

/// The page itself: one self-contained HTML document.
enum InvitationPage {
    /// Nothing loaded or sent from the page; only its own inline script and style run.
    static let headers: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        .cacheControl: "no-store",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
    ]

    /// The page for the node `name` with ID `id`.
    static func html(name: String, id: NodeID) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>Pair with \(escaped(name)) – syncd</title>
        <style>
        body { font-family: system-ui, sans-serif; max-width: 40em; margin: 1.5em auto; padding: 0 1em; line-height: 1.45; }
        code, pre { font-family: ui-monospace, monospace; }
        pre { white-space: pre-wrap; word-break: break-all; background: #f2f2f2; padding: .8em; border-radius: .4em; }
        button { font-size: 1.1em; padding: .5em 1.2em; }
        .id { word-break: break-all; }
        </style>
        </head>
        <body>
        <h1>Pair a machine with <q>\(escaped(name))</q></h1>
        <p>This code is a <strong>syncd</strong> pairing invitation: it lets another machine running syncd
        keep its documents in sync with <q>\(escaped(name))</q>, node ID <code class="id">\(id)</code>.
        A phone cannot join; run this command on the machine that should join:</p>
        <pre id="command"></pre>
        <p><button id="copy" type="button">Copy the command</button> <span id="copied"></span></p>
        <p>The invitation works once and expires. Its secret stays in this page's address: it was never sent to
        the server, and this page sends nothing anywhere.</p>
        <script>
        "use strict";
        // Only an invitation's own characters reach the command: a link that carries anything
        // else (a quote, a space, a shell command) gets no command to copy.
        const valid = /^#[A-Z2-7]{52}-[A-Z2-7]{1,128}$/i.test(location.hash)
          && /^\\/[a-z0-9_$()+%,-]*$/.test(location.pathname);
        const command = valid ? "syncd pair '" + location.origin + location.pathname + location.hash + "'" : "";
        document.getElementById("command").textContent =
          valid ? command : "This address is not a complete syncd invitation: scan the code again.";
        document.getElementById("copy").disabled = !valid;
        document.getElementById("copy").addEventListener("click", async () => {
          const said = document.getElementById("copied");
          try { await navigator.clipboard.writeText(command); said.textContent = "Copied."; }
          catch (error) {
            const range = document.createRange();
            range.selectNodeContents(document.getElementById("command"));
            getSelection().removeAllRanges();
            getSelection().addRange(range);
            said.textContent = document.execCommand("copy") ? "Copied." : "Selected: copy it with your browser.";
          }
        });
        </script>
        </body>
        </html>

        """
    }

    /// The page while no invitation is open: the code was used, cancelled or has expired.
    static func closed(name: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>No open invitation – syncd</title>
        <style>body { font-family: system-ui, sans-serif; max-width: 40em; margin: 1.5em auto; padding: 0 1em; line-height: 1.45; }</style>
        </head>
        <body>
        <h1>No pairing invitation of <q>\(escaped(name))</q> is open</h1>
        <p>This is a <strong>syncd</strong> node. The invitation this code held has been used, cancelled or
        has expired. For a new one, run <code>syncd pair</code> on <q>\(escaped(name))</q>.</p>
        </body>
        </html>

        """
    }

    /// `text` safe inside HTML text and attribute values.
    static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }
}

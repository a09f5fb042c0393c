import FoundationEssentials
import QRCode

/// An invitation as a person sees it: the QR code, the URL, who invites, and
/// what it shares and for how long. What `syncd pair` and a new agent print.
public enum InvitationText {
    /// The text of `url` from the node `name` (`id`), valid for `expiresIn` (as `10m`);
    /// the code drawn with `style` (ANSI colours on a terminal, plain characters elsewhere).
    public static func text(_ url: InvitationURL, node name: String, expiresIn: String,
                            style: QRCode.TerminalStyle) throws -> String {
        let code = try QRCode(url.codeText)
        return code.terminalText(style: style) + "\n" + """
            \(url)
            node \(name), ID \(url.id)
            Scan the code on the other machine, or run there: syncd pair '\(url)'
            This invitation shares \(url.databases.joined(separator: ", ")), works once, and expires in \(expiresIn).

            """
    }
}

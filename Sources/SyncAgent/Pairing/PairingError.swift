/// Why pairing failed, in words for the person pairing.
public enum PairingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not a pairing URL.
    case invalidURL(String)
    /// The inviting node refused the invitation's secret (wrong, used, expired, cancelled).
    case invitationRefused(String)
    /// The server is not the node the URL names.
    case wrongNode(String)
    /// The inviting node could not be reached.
    case unreachable(String)
    /// Too many failed attempts from this address; retry later.
    case rateLimited(String)
    /// Something failed on this node.
    case `internal`(String)

    /// What went wrong.
    public var description: String {
        switch self {
        case .invalidURL(let why): "not a pairing URL: \(why)"
        case .invitationRefused(let why): "pairing refused: \(why)"
        case .wrongNode(let why): "pairing refused before anything was sent: \(why)"
        case .unreachable(let why): "cannot reach the inviting node: \(why)"
        case .rateLimited(let why): "pairing refused: \(why)"
        case .internal(let why): why
        }
    }
}

import FoundationEssentials
import Hummingbird
import JSON
import Store

/// The welcome answer of `GET /`; the server's named endpoints are in ``ListenerEndpoint/serverEndpoints``.
extension CouchResponder {
    /// The syncd version reported in `GET /` under `vendor`.
    static let syncdVersion = SyncdVersion.current

    func welcome() throws -> Response {
        Self.json([
            "couchdb": "Welcome",
            "version": .string(configuration.couchVersion),
            "uuid": .string(listener.node.identity.uuid),
            // CouchDB's optional features (partitioned databases, per-document
            // access, the scheduler, …): syncd has none of them, so claims none.
            "features": [],
            "vendor": ["name": "syncd", "version": .string(Self.syncdVersion)],
        ])
    }
}

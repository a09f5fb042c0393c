import Logging
import Store
@testable import SyncAgent
import XCTest

/// A configured remote (a CouchDB hub, say) kept the same as a local database.
final class RemoteLinkTests: XCTestCase {
    /// Both directions follow continuously, below the applications' requests (as the pulls
    /// from peers do), with the database's filters; the pulls into the database share its claims.
    func testBothDirectionsFollowContinuouslyBelowTheRequests() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let catalog = try Catalog(directory: directory.path)
        defer { catalog.close() }
        let database = try catalog.create("notes")
        let shared = AgentConfiguration.SharedDatabase(name: "notes", pushFilter: .documentIDs(["b"]), pullFilter: .documentIDs(["a"]))
        let claims = RevisionClaims()
        let link = try RemoteLink(AgentConfiguration.RemoteDatabase(url: "http://127.0.0.1:9/notes", database: "notes"),
                                  database: database, filters: shared, claims: claims, logger: Logger(label: "test"))
        for replicator in [link.pull, link.push] {
            XCTAssertEqual(replicator.configuration.priority, .utility)
            XCTAssertTrue(replicator.configuration.continuous)
        }
        XCTAssertEqual(link.pull.configuration.filter, .documentIDs(["a"]))
        XCTAssertEqual(link.push.configuration.filter, .documentIDs(["b"]))
        XCTAssertTrue(link.pull.configuration.claims === claims)
        XCTAssertTrue(link.push.configuration.createTarget)
        await link.stop()
    }
}

import Hummingbird
import JSON
import NIOHTTP1
@testable import SyncAgent
import XCTest

/// The listener's one table of named endpoints (``ListenerEndpoint``) drives dispatch, 405 answers,
/// authorization and the metrics labels: every endpoint in it, checked each of those ways.
final class EndpointTableTests: XCTestCase {
    /// A path each endpoint answers, after the server or the database.
    private static func path(of endpoint: ListenerEndpoint) -> String {
        switch endpoint.name {
        case "_index/": "_index/ddoc/json/by-type"
        case "_syncd/": "_syncd/users"
        case "_design/": "_design/app/_view/by-type"
        case "_compact/": "_compact/app"
        default: endpoint.name
        }
    }

    func testEveryEndpointIsLabelledAuthorizedAsTheTableSaysAndRefusesAMethodItLacksWith405() async throws {
        let server = try await startListener()
        try await assertEqual(try await HTTP.json(.PUT, server.url + "/db").status, 201)
        var refused = 0
        for (table, prefix) in [(ListenerEndpoint.serverEndpoints, "/"), (ListenerEndpoint.databaseEndpoints, "/db/")] {
            for endpoint in table {
                let path = prefix + Self.path(of: endpoint)
                let route = try XCTUnwrap(Route(path: path), path)
                XCTAssertEqual(route.template, endpoint.label, path)
                XCTAssertFalse(endpoint.label.contains("{other}"), path)
                for method in [HTTPRequest.Method.get, .put, .post, .delete] {
                    let requirement = Listener.requirement(route: route, method: method)
                    guard let need = endpoint.methods[method] else {
                        // Anyone is told the method is not allowed: it says nothing of the data.
                        XCTAssertEqual(requirement, .open, "\(method) \(path)")
                        let answer = try await HTTP.request(try XCTUnwrap(HTTPMethod(rawValue: method.rawValue)), server.url + path,
                                                            json: method == .put || method == .post ? [:] : nil)
                        XCTAssertEqual(answer.status, 405, "\(method) \(path): \(answer.text)")
                        XCTAssertEqual(answer.json["error"], "method_not_allowed", "\(method) \(path)")
                        refused += 1
                        continue
                    }
                    XCTAssertEqual(requirement, need.requirement(in: "db"), "\(method) \(path)")
                }
            }
        }
        XCTAssertGreaterThan(refused, 40, "the table lost its endpoints")
        // Paths outside the table: an unknown server path is 404, an unknown `_name` of a database 400.
        XCTAssertEqual(Route(path: "/_nothing")?.template, "/{other}")
        XCTAssertEqual(Route(path: "/db/_nothing")?.template, "/{db}/{other}")
        try await assertEqual(try await HTTP.request(.GET, server.url + "/_nothing").status, 404)
        try await assertEqual(try await HTTP.request(.GET, server.url + "/db/_nothing").status, 400)
    }
}

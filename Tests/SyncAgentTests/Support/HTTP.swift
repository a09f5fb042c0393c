import AsyncHTTPClient
import Foundation
import JSON
import NIOCore
import NIOHTTP1
import Store

/// An HTTP answer with its body read whole.
struct HTTPAnswer: Sendable {
    /// The status code.
    let status: Int
    /// The response headers.
    let headers: HTTPHeaders
    /// The body.
    let body: [UInt8]

    /// The body as text.
    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as JSON; `.null` when it does not parse.
    var json: JSON { (try? JSON(parsing: body)) ?? .null }

    /// The first value of header `name`.
    func header(_ name: String) -> String? { headers.first(name: name) }
}

/// Requests for tests, over AsyncHTTPClient's shared client (or a given one).
enum HTTP {
    /// A request to `url` with `headers`; credentials in the URL go out as Basic
    /// authentication, as a CouchDB client sends them.
    static func makeRequest(_ method: HTTPMethod, _ url: String, headers: [(String, String)] = []) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if var components = URLComponents(string: url), let user = components.user {
            request.headers.add(name: "Authorization", value: "Basic " + Data("\(user):\(components.password ?? "")".utf8).base64EncodedString())
            components.user = nil
            components.password = nil
            request.url = components.string ?? url
        }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        return request
    }

    /// Sends a request and reads the whole answer (bodies up to 256 MB).
    static func request(
        _ method: HTTPMethod, _ url: String, body: [UInt8]? = nil, json: JSON? = nil,
        headers: [(String, String)] = [], client: HTTPClient = .shared, timeout: TimeAmount = .seconds(30)
    ) async throws -> HTTPAnswer {
        var request = makeRequest(method, url, headers: headers)
        if let json {
            request.headers.replaceOrAdd(name: "Content-Type", value: "application/json")
            request.body = .bytes(json.serializedBytes())
        } else if let body {
            request.body = .bytes(body)
        }
        let response = try await client.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 256 << 20)
        return HTTPAnswer(status: Int(response.status.code), headers: response.headers, body: Array(bytes.readableBytesView))
    }

    /// Sends a request with an optional JSON body and returns the status and JSON answer.
    static func json(
        _ method: HTTPMethod, _ url: String, _ body: JSON? = nil, headers: [(String, String)] = [], client: HTTPClient = .shared
    ) async throws -> (status: Int, json: JSON) {
        let answer = try await request(method, url, json: body, headers: headers, client: client)
        return (answer.status, answer.json)
    }

    /// An `Authorization: Basic` header.
    static func basic(_ name: String, _ password: String) -> (String, String) {
        ("Authorization", "Basic " + Data("\(name):\(password)".utf8).base64EncodedString())
    }
}

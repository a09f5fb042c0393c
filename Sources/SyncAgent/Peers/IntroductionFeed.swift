import AsyncHTTPClient
import JSON
import Logging
import NIOCore
import NIOHTTP1

/// Follows one member's introductions over its connection: `GET /_introductions`,
/// long-polled with the tag last answered, each new list kept in the peer store
/// (``PeerStore/record(_:from:)``), which recomputes the group and tells the agent.
/// A member that does not serve introductions (an older syncd: 404) is left alone;
/// a failed or refused request (the member may not have heard of this node yet) is
/// tried again after a pause (``ReplicatorTuning/introductionRetry``).
struct IntroductionFeed: Sendable {
    /// The member followed.
    let member: PairedPeer
    /// Its connection, shared with the pulls.
    let connection: PeerConnection
    /// Where the introductions are kept.
    let peers: PeerStore
    let logger: Logger

    /// How often the member writes (a newline) while it holds the request
    /// (``ReplicatorTuning/introductionWait``): within the read timeout, which cuts a request silent that long.
    var heartbeat: Duration { connection.readTimeout * 4 / 5 }

    /// Follows until cancelled, or until the member says it will not answer.
    func run() async {
        var tag: String?
        var failures = 0
        // Cleared for a member that held a request in silence (an older syncd, which
        // ignores `heartbeat`): its waits then end within the read timeout.
        var heartbeats = true
        while !Task.isCancelled {
            do {
                guard let answer = try await fetch(since: tag, heartbeats: heartbeats) else { return }
                failures = 0
                if answer.tag != tag {
                    peers.record(answer.introductions, from: member.id)
                    tag = answer.tag
                }
            } catch let error as HTTPClientError where error == .readTimeout && heartbeats {
                heartbeats = false
                logger.info("introductions from \(member.name) sent no heartbeat; asking within the read timeout")
            } catch {
                failures += 1
                if failures == 1 { logger.info("introductions from \(member.name) unavailable: \(error); trying again") }
                try? await Task.sleep(for: ReplicatorTuning.introductionRetry.delay(afterFailures: failures))
            }
        }
    }

    /// One answer; `nil` when the member does not serve introductions (404).
    private func fetch(since tag: String?, heartbeats: Bool) async throws -> (tag: String, introductions: [Introduction])? {
        let wait = heartbeats ? ReplicatorTuning.introductionWait : heartbeat
        var url = "https://\(connection.address)/_introductions?timeout=\(Int(wait / .milliseconds(1)))"
        if heartbeats { url += "&heartbeat=\(Int(heartbeat / .milliseconds(1)))" }
        if let tag { url += "&since=\(tag)" }
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await connection.client.execute(request, deadline: .now() + TimeAmount(wait + ReplicatorTuning.introductionGrace))
        let body = try await response.body.collect(upTo: ReplicatorTuning.largestIntroductions)
        switch response.status.code {
        case 200:
            guard let json = try? JSON(parsing: body.readableBytesView), let answer = Introduction.parse(answer: json) else {
                throw EndpointError(status: 502, error: "bad_introductions", reason: "the member's introductions are not valid",
                                    endpoint: connection.address)
            }
            return answer
        case 404:
            logger.info("\(member.name) does not introduce its peers (an older syncd)")
            return nil
        default:
            throw EndpointError(status: Int(response.status.code), error: "introductions_failed",
                                reason: "GET /_introductions answered \(response.status.code)", endpoint: connection.address)
        }
    }
}

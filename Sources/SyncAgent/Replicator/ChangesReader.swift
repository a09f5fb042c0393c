import Logging

/// First stage: reads the source's changes feed (`style=all_docs`, the filter
/// applied at the source, a continuous feed when continuous) into the change
/// queue, which the revision finder takes batches from. A full queue makes it wait.
struct ChangesReader: Sendable {
    let source: any Endpoint
    let request: ChangeFeedRequest
    let progress: ReplicationProgress
    let logger: Logger

    func run(into output: ChangeQueue) async throws {
        defer { output.finish() }
        do {
            try await read(request, into: output)
        } catch let error as EndpointError where error.status == 400 && error.reason.contains("'since'") && request.since != .zero {
            // The source never issued the checkpoint's sequence (a copy restored from an
            // older backup): CouchDB 3.5 and syncd refuse it before sending any change.
            // Everything is read again; the target's _revs_diff keeps it cheap.
            logger.warning("the source does not know the checkpoint's sequence; reading its changes from the start",
                           metadata: ["source": "\(source.displayName)", "since": "\(request.since)"])
            progress.sessionStarted(at: .zero, continuous: request.continuous)
            var fromStart = request
            fromStart.since = .zero
            try await read(fromStart, into: output)
        }
    }

    private func read(_ request: ChangeFeedRequest, into output: ChangeQueue) async throws {
        try await source.changes(request) { batch in
            try await output.append(batch)
        }
    }
}

import AsyncAlgorithms
import Hummingbird
import ServiceLifecycle
import Store

/// `GET/POST /{db}/_changes`: the normal feed streamed page by page, and the
/// waiting feeds (longpoll, continuous, eventsource) that send changes as
/// they commit, with heartbeats, until the timeout, the limit, or the client
/// going away.
extension CouchResponder {
    /// Changes read from the store per page of a normal feed.
    static let changesPageSize = 1000

    func changes(_ db: Database, _ exchange: inout Exchange) async throws -> Response {
        let offered = exchange.principal.peer.flatMap { listener.node.sharing.pushFilter(for: $0, database: db.name) }
        let request = try await ChangesRequest(&exchange, database: db, bodyLimit: configuration.maximumRequestSize, offered: offered)
        // A missing design document or function is a 404 before the answer starts, not a cut stream.
        _ = try await Self.passing([], request, in: db)
        switch request.feed {
        case .normal where request.options.selector != nil || request.options.designOnly || !request.designFilters.isEmpty:
            // One page of a filtered feed may pass over the whole database: stop when the client goes away.
            // Watching for that ends the connection after the answer; say so.
            let body = exchange.request.body
            var response = Self.streamingJSON { writer in
                try await body.consumeWithCancellationOnInboundClose { _ in try await Self.writeNormalFeed(db, request, to: &writer) }
            }
            response.headers[.connection] = "close"
            return response
        case .normal:
            return Self.streamingJSON { writer in try await Self.writeNormalFeed(db, request, to: &writer) }
        case .longpoll:
            var probe = request.options
            probe.limit = 1
            let waiting = try await db.changesPage(probe).changes.isEmpty
            if request.options.descending || !waiting {
                return Self.streamingJSON { writer in try await Self.writeNormalFeed(db, request, to: &writer) }
            }
            return try waitingFeed(exchange, contentType: "application/json") { writer, shutdown in
                try await self.writeLongpoll(db, request, shutdown: shutdown, to: &writer)
            }
        case .continuous:
            return try waitingFeed(exchange, contentType: "application/json") { writer, shutdown in
                try await self.writeContinuous(db, request, eventSource: false, shutdown: shutdown, to: &writer)
            }
        case .eventsource:
            return try waitingFeed(exchange, contentType: "text/event-stream") { writer, shutdown in
                try await self.writeContinuous(db, request, eventSource: true, shutdown: shutdown, to: &writer)
            }
        }
    }

    /// About how many bytes of a streamed answer (a feed, a listing, `_bulk_get`) are gathered before they are written.
    static let flushSize = 64 << 10

    /// A chunked JSON answer written by `body`, in writes of about ``flushSize``.
    static func streamingJSON(_ body: @escaping @Sendable (inout any ResponseBodyWriter) async throws -> Void) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody { writer in
            try await body(&writer)
            try await writer.finish(nil)
        })
    }

    /// A long-lived answer whose writing stops as soon as the client closes
    /// the connection, and ends normally when the server shuts down gracefully
    /// (the body is handed a stream that finishes then). A client address holds
    /// at most ``ListenerLimits/maximumFeedsPerClient`` of them (429 beyond).
    /// Watching for the client reads the connection, so it is not reused after the
    /// answer. An answer whose wait is bounded may keep it instead (`watchesClient`
    /// false): a client that leaves then holds its slot until the wait ends, and one
    /// that stays asks again with no new connection (and no new TLS handshake).
    func waitingFeed(_ exchange: Exchange, contentType: String, watchesClient: Bool = true,
                     _ body: @escaping @Sendable (inout any ResponseBodyWriter, AsyncStream<Void>) async throws -> Void) throws -> Response {
        guard case .success(let slot) = listener.feeds.acquire(for: exchange.context.clientAddress) else {
            var error = CouchError(.tooManyRequests, "too_many_requests", "Too many change feeds open from this address; retry later.")
            error.headers[.retryAfter] = "1"
            throw error
        }
        let request = exchange.request
        var headers: HTTPFields = [.contentType: contentType]
        if watchesClient { headers[.connection] = "close" }
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // Held until the feed ends (or the answer is dropped unwritten).
            defer { withExtendedLifetime(slot) {} }
            let (shutdown, stop) = AsyncStream.makeStream(of: Void.self)
            do {
                try await withGracefulShutdownHandler {
                    guard watchesClient else {
                        try await body(&writer, shutdown)
                        try await writer.finish(nil)
                        return
                    }
                    // The connection closes when this returns, so the body ends in here.
                    try await request.body.consumeWithCancellationOnInboundClose { _ in
                        try await body(&writer, shutdown)
                        try await writer.finish(nil)
                    }
                } onGracefulShutdown: {
                    stop.finish()
                }
            } catch is CancellationError {
                return
            }
        })
    }

    /// The whole feed in pages of ``changesPageSize``, so memory stays bounded however many changes there are.
    static func writeNormalFeed(_ db: Database, _ request: ChangesRequest, to writer: inout any ResponseBodyWriter) async throws {
        var output: [UInt8] = Array(#"{"results":["#.utf8)
        var options = request.options
        var remaining = options.limit
        var first = true
        var last: (sequence: UInt64, pending: Int)
        while true {
            if !options.descending { options.limit = min(changesPageSize, remaining ?? changesPageSize) }
            let page = try await db.changesPage(options)
            let changes = try await Self.passing(page.changes, request, in: db)
            for change in changes {
                output += first ? [0x0A] : [UInt8(ascii: ","), 0x0A]
                first = false
                ChangeRow.write(change, conflicts: request.conflicts, to: &output)
            }
            if output.count >= Self.flushSize {
                try await writer.write(ByteBuffer(bytes: output))
                output.removeAll(keepingCapacity: true)
            }
            remaining = remaining.map { $0 - changes.count }
            last = (page.lastSequence, page.pending)
            if options.descending || page.changes.count < (options.limit ?? 0) || remaining == 0 { break }
            options.since = page.lastSequence
        }
        output += Array("\n],\n\"last_seq\":\(last.sequence),\"pending\":\(last.pending)}\n".utf8)
        try await writer.write(ByteBuffer(bytes: output))
    }

    /// Waits for the first change after `since`, then answers like a normal feed.
    private func writeLongpoll(_ db: Database, _ request: ChangesRequest, shutdown: AsyncStream<Void>,
                               to writer: inout any ResponseBodyWriter) async throws {
        let start = ContinuousClock.now
        for try await event in Self.events(db, request, shutdown: shutdown) {
            switch event {
            case .changes, .end:
                try await Self.writeNormalFeed(db, request, to: &writer)
                return
            case .tick:
                if request.heartbeat != nil { try await writer.write(ByteBuffer(bytes: [0x0A])) }
                if ContinuousClock.now - start >= request.timeout {
                    let last = max(try db.lastSequence(), request.options.since)
                    try await writer.write(ByteBuffer(string: "{\"results\":[\n],\n\"last_seq\":\(last),\"pending\":0}\n"))
                    return
                }
            }
        }
    }

    /// Each change as a line (or an event), heartbeats while idle, and a
    /// final `last_seq` line when the timeout or the limit ends the feed. The
    /// changes committed since the last write go out in one write, so a burst
    /// costs a few writes, not one per change.
    private func writeContinuous(_ db: Database, _ request: ChangesRequest, eventSource: Bool, shutdown: AsyncStream<Void>,
                                 to writer: inout any ResponseBodyWriter) async throws {
        var lastSequence = request.options.since
        var count = 0
        var idle = ContinuousClock.now
        loop: for try await event in Self.events(db, request, shutdown: shutdown) {
            switch event {
            case .changes(let read):
                let render = { @Sendable (changes: [Change]) -> [UInt8] in
                    var output: [UInt8] = []
                    for change in changes {
                        if eventSource { output += Array("data: ".utf8) }
                        ChangeRow.write(change, conflicts: request.conflicts, to: &output)
                        output += eventSource ? Array("\nid: \(change.sequence)\n\n".utf8) : [0x0A]
                    }
                    return output
                }
                // Rows a design document's function passed are this feed's own: never shared with other feeds.
                let changes = try await Self.passing(read, request, in: db)
                let rows = request.designFilters.isEmpty
                    ? listener.feedRows.rows(of: changes, in: db, options: request.options, conflicts: request.conflicts,
                                             eventSource: eventSource, write: render)
                    : render(changes)
                if let last = read.last { lastSequence = last.sequence }
                if !rows.isEmpty { try await writer.write(ByteBuffer(bytes: rows)) }
                count += changes.count
                idle = .now
                if let limit = request.options.limit, count >= limit { break loop }
            case .tick:
                if request.heartbeat != nil {
                    try await writer.write(ByteBuffer(string: eventSource ? "event: heartbeat\ndata: \n\n" : "\n"))
                } else if ContinuousClock.now - idle >= request.timeout {
                    break loop
                }
            case .end:
                break loop
            }
        }
        if !eventSource {
            if count == 0, request.options.limit != 0 { lastSequence = max(lastSequence, try db.lastSequence()) }
            try await writer.write(ByteBuffer(string: "{\"last_seq\":\(lastSequence),\"pending\":0}\n"))
        }
    }

    /// The changes that pass the request's design document filters, all of them without any.
    static func passing(_ changes: [Change], _ request: ChangesRequest, in db: Database) async throws -> [Change] {
        var passed = changes
        for filter in request.designFilters {
            passed = try await db.filter(passed, by: filter.function, of: filter.design, request: filter.request, allLeaves: request.options.allLeaves)
        }
        return passed
    }

    /// What a waiting feed reacts to.
    enum FeedEvent: Sendable {
        /// Changes, existing or newly committed: all that were ready, up to a page.
        case changes([Change])
        /// Time to send a heartbeat or check the timeout.
        case tick
        /// The store's feed ended (the database closed), or the server is shutting down.
        case end
    }

    /// The database's change feed merged with a timer ticking every heartbeat
    /// (or timeout), and an `.end` when `shutdown` finishes.
    static func events(_ db: Database, _ request: ChangesRequest, shutdown: AsyncStream<Void>) -> some AsyncSequence<FeedEvent, any Error> & Sendable {
        var options = request.options
        options.descending = false
        let changes = chain(db.changeFeed(options, pageSize: changesPageSize).map { FeedEvent.changes($0) }, [FeedEvent.end].async)
        let interval = request.heartbeat ?? request.timeout
        let ticks = AsyncTimerSequence(interval: interval, clock: ContinuousClock()).map { _ in FeedEvent.tick }
        let stop = chain(shutdown.compactMap { _ in FeedEvent?.none }, [FeedEvent.end].async)
        return merge(changes, ticks, stop)
    }
}

import NIOCore

/// The replicator's and the peer links' tuning constants, each with the reason for its value,
/// in one place as couchbase-lite-core keeps its `ReplicatorTuning.hh`. The listener's limits
/// on connections are in `ListenerLimits`. Those that public default arguments use are public.
public enum ReplicatorTuning {
    // MARK: Changes feed

    /// Changes per batch (``ReplicationConfiguration/batchSize``): CouchDB's replicator's
    /// `worker_batch_size` default. A smaller batch checkpoints more often and holds less.
    static let batchSize = 500

    /// How many batches the change queue holds before the reader waits: the finder takes
    /// one while the next is read, so the stages overlap.
    static let changeQueueBatches = 2

    /// How often a remote continuous feed is asked for a heartbeat (``ReplicationConfiguration/heartbeat``).
    static let heartbeat: Duration = .seconds(10)

    /// How long a continuous feed may stay silent before it is declared dead: two and a
    /// half heartbeat intervals (a server sends one per interval).
    static func silenceLimit(heartbeatMilliseconds: Int) -> Duration {
        .milliseconds(max(1, heartbeatMilliseconds) * 5 / 2)
    }

    /// The request timeout of a continuous feed, in effect none: the feed stays open as long as
    /// the replication runs, and its ``silenceLimit(heartbeatMilliseconds:)`` ends a dead one.
    static let continuousFeedTimeout: Duration = .seconds(365 * 24 * 3600)

    /// The longest line of a continuous feed held while waiting for its end (a row lists
    /// one document's leaves: thousands of them fit many times over).
    static let longestChangeLine = 16 << 20

    /// The longest feed line whose document is kept with its change: the change queue holds
    /// up to two batches of rows, so a larger document is read by `_bulk_get` as before.
    static let longestCarriedLine = 8 << 10

    // MARK: Fetcher

    /// How many requests a batch's revisions are read with at once (``ReplicationConfiguration/parallelFetches``).
    /// More than one helps only when the source has cores to spare (two syncd on two cores: it does not).
    static let parallelFetches = 1

    /// Missing documents per parallel request: a batch is split only when it is large.
    static let documentsPerFetch = 50

    /// How long a batch waits for revisions another replication into the same target is
    /// fetching (``RevisionClaims``) before it fetches them too: long enough for a large
    /// attachment on a gigabit LAN (1 GiB in about 10 s), shorter than a dead feed's silence
    /// limit, so a pull stuck on a link that died silently holds the others up less than that.
    public static let claimWait: Duration = .seconds(10)

    /// The bytes of revisions held before a part is passed on to the inserter, so that a pull
    /// holds about this much per parallel fetch however large a batch and its attachments are.
    static let fetchPartBudget = 16 << 20

    /// How many `GET doc?open_revs=` requests (one per document) run at once where the
    /// source has no `_bulk_get`: a few.
    static let openRevisionsAtOnce = 8

    /// How long a remote may be waited on without progress in an answer (``AnswerProgress``:
    /// a complete row or part, or ``progressBytes``) before the request is cut
    /// (``RemoteEndpoint/Configuration/progressTimeout``): a source that drips bytes is cut then.
    public static let progressTimeout: Duration = .seconds(60)

    /// The bytes of an answer that count as progress without a complete result: a large part
    /// is progress as long as a mebibyte of it arrives within ``progressTimeout``.
    static let progressBytes = 1 << 20

    /// The largest answer held whole: feeds, diffs and documents without attachments.
    static let largestAnswer = 64 << 20

    /// Room beside a document's JSON for its `_revisions` and attachment descriptions.
    static let documentMetadataAllowance = 1 << 20

    /// The largest attachment read from a remote (``RemoteEndpoint/Configuration/maximumAttachmentSize``): 4 GiB, the listener's default.
    public static let maximumAttachmentSize = 1 << 32

    /// How many parts of a multipart answer one asked revision may bring: with `latest`, a
    /// revision that was edited on several branches answers with each of their leaves.
    static let leavesPerAskedRevision = 16

    /// The most of an error answer's body read for its CouchDB `error` and `reason`.
    static let largestErrorAnswer = 1 << 20

    // MARK: Inserter

    /// The body size at which a `_bulk_docs` request is sent and the next one begun
    /// (a target answering 413 to it gets halves, down to one revision).
    static let bulkDocsBudget = 4 << 20

    /// Inline attachment data (base64 characters) at which a revision is sent alone as a
    /// `multipart/related` PUT, as CouchDB's replicator sends it, so its content is not base64 inside JSON.
    static let multipartThreshold = 256 << 10

    // MARK: Checkpoints

    /// How often progress is checkpointed while changes flow (``ReplicationConfiguration/checkpointInterval``;
    /// CouchDB's default is 30 s): a replication killed with SIGKILL reads again at most this much.
    static let checkpointInterval: Duration = .seconds(5)

    /// The shortest interval between timed checkpoints, whatever was configured.
    static let shortestCheckpointInterval: Duration = .milliseconds(10)

    /// The least time between checkpoints taken because the replication fell idle, so a
    /// caught-up replication's checkpoint is current without one per lone change.
    static let idleCheckpointSpacing: Duration = .seconds(1)

    /// How long a failed session waits to keep what was done (its last checkpoint) if both sides still answer.
    static let lastCheckpointDeadline: Duration = .seconds(5)

    /// Most history entries kept in a checkpoint, as CouchDB keeps.
    static let checkpointHistoryLimit = 50

    /// How many times a checkpoint write that meets 409 re-reads the `_rev` and tries again.
    static let checkpointConflictRetries = 5

    /// How many recent batches the progress remembers, to find what was completed at a
    /// checkpoint when a session resumes from it; half are dropped when it is full.
    static let rememberedBatches = 1024

    // MARK: Retries

    /// The first wait after a side could not be reached (``RetryPolicy/initialDelay``).
    public static let retryInitialDelay: Duration = .seconds(1)

    /// The longest wait, reached by doubling (``RetryPolicy/maximumDelay``): a minute.
    public static let retryMaximumDelay: Duration = .seconds(60)

    /// How many failed attempts in a row a one-shot replication makes before it gives up (``RetryPolicy/oneShotAttempts``).
    public static let oneShotAttempts = 5

    /// The share of a wait kept: a random share of up to a half is cut, so replications
    /// that failed together (a peer restarting under many) do not all come back in the same instant.
    static let retryJitter: ClosedRange<Double> = 0.5...1

    // MARK: Remote endpoints

    /// The longest a request (other than a continuous feed) may take: generous (``RemoteEndpoint/Configuration/requestTimeout``).
    public static let requestTimeout: Duration = .seconds(120)

    /// The longest to wait for a connection (``RemoteEndpoint/Configuration/connectTimeout``).
    public static let connectTimeout: Duration = .seconds(10)

    /// Connections one endpoint opens to its server before requests wait: AsyncHTTPClient's default.
    static let connectionsPerHost = 8

    /// The longest to wait for a server's certificate before checking its pinned fingerprint.
    static let pinnedCertificateDeadline: TimeAmount = .seconds(10)

    /// The longest to wait for an untrusted server's certificate, only to name its node ID in the error.
    static let untrustedCertificateDeadline: TimeAmount = .seconds(2)

    // MARK: Peer links

    /// How long a peer link waits after failures in a row: 0.4–0.8 s the first time (with the
    /// jitter), doubling up to 30–60 s, so a peer that is gone is not dialled in a loop.
    static let peerRetry = RetryPolicy(initialDelay: .milliseconds(800), maximumDelay: .seconds(60))

    /// How often a peer's whole feed is read once, from its own checkpoint, for each database
    /// pulled first-hand only (``FeedRing``): whatever the ring did not carry (members that see
    /// different rings) arrives within this. A sweep that finds nothing new still costs its
    /// member about 15 ms of CPU, both ends counted (measured in a group of ten): seven a minute
    /// would be 0.18 % of a core at idle; seven per ten minutes, 0.02 %. The first sweep of a
    /// member reads its whole feed from the start, once.
    static let wholeFeedSweep: Duration = .seconds(600)

    /// A peer on the LAN that says nothing for 30 s is gone (the feed's own watchdog is shorter).
    static let peerRequestTimeout: Duration = .seconds(30)

    /// The longest to wait for a connection to a peer on the LAN.
    static let peerConnectTimeout: Duration = .seconds(5)

    /// The longest a probe of one of a peer's addresses (the TLS handshake reading its certificate,
    /// or `GET /`) may take: all are tried at once, and a dead address loses to a live one without waiting longer.
    static let peerProbeDeadline: TimeAmount = .seconds(3)

    /// Connections the one client of a peer opens to it before requests wait: each pull's continuous
    /// feed holds one for as long as it runs (HTTP/1.1), so as many as the listener lets one client
    /// hold feeds (``ListenerLimits/maximumFeedsPerClient``), and ``connectionsPerHost`` for the pulls' other requests.
    static let peerConnections = ListenerLimits().maximumFeedsPerClient + connectionsPerHost

    /// How often at most (seconds) the peers' `lastSeen` times are written, so busy replications do not rewrite the peers file.
    static let peerSeenInterval: Double = 60

    /// How long a member may hold a request for its introductions before answering that nothing
    /// changed (``IntroductionFeed``): five minutes, with a heartbeat within the read timeout so
    /// the request is never cut. A quiet pair of members then costs one request each way per five
    /// minutes, on the connection they keep.
    static let introductionWait: Duration = .seconds(300)

    /// How long past ``introductionWait`` a request for introductions may go unanswered before it is given up.
    static let introductionGrace: Duration = .seconds(15)

    /// The longest introductions answer read: thousands of members, at a few hundred bytes each.
    static let largestIntroductions = 1 << 20

    /// How long a failed or refused request for introductions (the member may not have heard of
    /// this node yet) waits before it is made again: a second, doubling to 30 s, not jittered.
    static let introductionRetry = RetryPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(30))
}

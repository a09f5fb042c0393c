import CSQLite
import FoundationEssentials
import Locking

/// One document database: a SQLite file in WAL mode and a folder of
/// attachment files beside it.
///
/// A `Database` is safe to use from any task. Reads run on the caller's
/// thread against a snapshot and never wait for writes; writes from all
/// callers are queued to a single writer that commits them in groups.
///
/// Which calls block (as GRDB documents its own):
/// - Every synchronous call blocks its thread while SQLite works: for a
///   document, a `revsDiff` or a page of a few thousand rows, tens of
///   microseconds to a few milliseconds. A call that may pass over the whole
///   database (``changes(_:)`` when ``ChangesOptions/mayScanEverything``,
///   ``allDocs(_:)`` by many keys) belongs on ``ScanThreads``, not on a task's thread.
/// - `async` writes wait for their group commit without holding a thread.
/// - ``find(_:)`` runs its reads on ``ScanThreads`` itself.
/// - A ``changeFeed(_:pageSize:)`` reads each page on the consuming task's
///   thread: pages of new commits are small, and a hop would add latency.
///   Feeds at the same place share the page one of them read (``SharedFeedPage``).
///
/// ```swift
/// let db = try Database.open(path: "/var/lib/syncd/notes.sqlite", name: "notes")
/// let rev = try await db.put(["_id": "a", "title": "hello"])
/// let doc = try db.document(id: "a")
/// for await sequence in db.commits() { ... }   // after every commit
/// ```
public final class Database: Sendable {
    /// Tunables fixed when a database is opened.
    public struct Options: Sendable {
        /// Read connections kept open.
        public var readers = 4
        /// Wait for the disk on every commit (SQLite `synchronous=FULL`). The default,
        /// `NORMAL`, survives any crash of the process but not a power cut.
        public var fullSync = false
        /// The largest document body accepted, in bytes (CouchDB's default: 8 MB).
        public var maximumDocumentSize = 8_000_000
        /// The most leaves (conflicting branches) a document may have: each write and read of a
        /// document costs in proportion to its tree, so a peer adding leaf after leaf (8,000 took
        /// 21 s to write) is refused with 413 beyond this. Edits that add no leaf are always taken.
        public var maximumLeaves = 1_000
        /// Told how long each group commit's transaction took (its writes and `COMMIT`), for
        /// metrics kept outside the store; called on the writer's thread, so it must be quick.
        public var commitObserver: (@Sendable (Duration) -> Void)?
        /// The largest a document's revision tree may grow, in encoded bytes (its leaves'
        /// bodies and every revision id): the whole tree is read and rewritten on each
        /// write, so a write that grows it past this is refused with 413. Leaves of
        /// ``maximumDocumentSize`` bodies would otherwise make one document cost gigabytes.
        public var maximumTreeSize = 64 << 20
        /// Runs design documents' `validate_doc_update` functions on every write; without
        /// one, the store keeps them as data and judges nothing.
        public var designFunctions: (any DesignFunctions)?
        /// Defaults.
        public init() {}
    }

    /// The database's name, as the listener serves it.
    public let name: String
    /// The path of the SQLite file.
    public let path: String
    /// A UUID made when the database was created, never changed: replication
    /// checkpoints are keyed by it.
    public let uuid: String
    /// When this instance was opened, in microseconds since 1970 (CouchDB's `instance_start_time`).
    public let instanceStartTime: Int64

    let options: Options
    /// The largest document body, without attachments, this database takes (`max_document_size`).
    public var maximumDocumentSize: Int { options.maximumDocumentSize }
    let writer: Writer
    let readers: Readers
    /// The last page a change feed read, for the other feeds at the same place.
    let sharedFeedPage = SharedFeedPage()
    /// What `_revs_diff` may answer without reading the store.
    let recentWinners = RecentWinners()
    /// The design documents that judge writes, read once.
    let designs = ValidatingDesigns()
    /// The view index updates running, one per view group.
    let viewUpdates = ViewUpdates()
    /// The native views defined, by name.
    let nativeViews = Locked<[String: NativeView]>([:])
    /// The last committed sequence after each commit.
    let notifier: Broadcast<UInt64>
    let attachments: AttachmentStore
    private let checkpointer: LogCheckpointer
    private let expirySweeper = Locked<Task<Void, Never>?>(nil)

    /// The most attachments one document may have: what the listener takes and the
    /// replicator carries alike (a multipart document of the document and each attachment
    /// is read up to one part more), so no node stores a document its peers could not take.
    public static let maximumAttachments = 10_000

    /// Opens the database file at `path`, creating it (and its attachment folder) if needed.
    public static func open(path: String, name: String? = nil, options: Options = Options()) throws(StoreError) -> Database {
        try Database(path: path, name: name ?? URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent, options: options)
    }

    private init(path: String, name: String, options: Options) throws(StoreError) {
        self.name = name
        self.path = path
        self.options = options
        self.instanceStartTime = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let connection = try Connection(path: path, readOnly: false)
        try connection.execute("PRAGMA journal_mode = WAL")
        try connection.execute("PRAGMA synchronous = \(options.fullSync ? "FULL" : "NORMAL")")
        // Pages the writer only reads come from the readers' mapping of the file (the OS's
        // cache, shared); its own cache then holds little more than the pages it changes.
        try connection.execute("PRAGMA mmap_size = \(Readers.mappedBytes)")
        try connection.execute("PRAGMA cache_size = -4000")
        // Checkpoints run on their own connection and thread (LogCheckpointer).
        try connection.execute("PRAGMA wal_autocheckpoint = 0")
        try Schema.migrate(connection)
        try Schema.rebuildIndexesOfOtherCollation(connection)
        let meta = try Self.loadMeta(connection)
        let queryIndexes = try IndexEntries.load(from: connection)
        // No statement may keep a read snapshot open on the writer's connection: its first
        // write would fail at once if another connection committed since.
        connection.resetStatements()
        self.uuid = meta.uuid
        self.attachments = try AttachmentStore(folder: path + ".attachments")
        // A slow consumer needs only the newest sequence.
        let notifier = Broadcast<UInt64>(bufferingPolicy: .bufferingNewest(1))
        self.notifier = notifier
        let readers = Readers(path: path, count: max(1, options.readers))
        self.readers = readers
        let checkpointer = try LogCheckpointer(path: path)
        self.checkpointer = checkpointer
        self.writer = Writer(
            context: WriteContext(connection: connection, maximumLeaves: options.maximumLeaves, maximumTreeSize: options.maximumTreeSize,
                                  lastSequence: meta.lastSequence, docCount: meta.docCount,
                                  deletedCount: meta.deletedCount, revsLimit: meta.revsLimit, queryIndexes: queryIndexes),
            logPath: path + "-wal",
            checkpointer: checkpointer,
            recentWinners: recentWinners,
            committed: { notifier.yield($0) },
            commitObserver: options.commitObserver,
            logGrew: { db in readers.pause { try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)") } }
        )
        scheduleExpiry()
    }

    private struct Meta {
        var uuid: String
        var lastSequence: UInt64
        var docCount: Int
        var deletedCount: Int
        var revsLimit: Int
    }

    private static func loadMeta(_ db: Connection) throws(StoreError) -> Meta {
        var values: [String: Statement.Value] = [:]
        let select = try db.statement("SELECT key, value FROM meta")
        while try select.step() { values[select.string(0)] = select.value(1) }
        var uuid = values["uuid"]?.text ?? ""
        if uuid.isEmpty {
            uuid = Self.newDocumentID()
            let insert = try db.statement("INSERT INTO meta(key, value) VALUES ('uuid', ?), ('revs_limit', 1000)")
            insert.bind(uuid, at: 1)
            try insert.run()
        }
        return Meta(
            uuid: uuid,
            lastSequence: UInt64(values["last_seq"]?.integer ?? 0),
            docCount: Int(values["doc_count"]?.integer ?? 0),
            deletedCount: Int(values["del_count"]?.integer ?? 0),
            revsLimit: Int(values["revs_limit"]?.integer ?? 1000)
        )
    }

    /// Finishes queued writes, ends change streams and closes the files.
    /// Using the database afterwards throws.
    public func close() {
        expirySweeper.withLock { $0?.cancel() }
        writer.close()
        checkpointer.close()
        readers.close()
        notifier.finish()
    }

    /// Gives back the memory SQLite holds for this database: the writer's page
    /// cache (pages are read again when next needed) and the read connections
    /// not in use (reopened when next needed). For a database gone idle: a
    /// listener serving many databases would otherwise keep each one's caches
    /// (up to 4 MB for the writer) for as long as it runs.
    public func releaseMemory() {
        writer.releaseMemory()
        readers.closeUnused()
        sharedFeedPage.release()
        recentWinners.release()
    }

    /// Bytes of page cache held by the writer and the read connections not in use.
    public var cacheMemory: Int { writer.cacheUsed + readers.cacheUsed }

    /// A stream of the last sequence after each commit that changed documents.
    /// It ends when the database is closed. A slow consumer sees only the newest value.
    public func commits() -> AsyncStream<UInt64> { notifier.subscribe() }

    /// Runs `work` on a read snapshot.
    func read<T: Sendable>(_ work: @Sendable (Connection) throws -> T) throws(StoreError) -> T {
        do {
            return try readers.read(work)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .internal("\(error)")
        }
    }

    /// Runs `work` in the writer's next group commit.
    func write<T: Sendable>(_ work: @escaping @Sendable (inout WriteContext) throws -> T) async throws(StoreError) -> T {
        try await completion(of: writer.submit(work))
    }

    /// Queues `work` for the next group commit without waiting for it.
    func submit<T: Sendable>(_ work: @escaping @Sendable (inout WriteContext) throws -> T) -> PendingWrite<T> {
        writer.submit(work)
    }

    /// The result of a submitted job, once committed; errors as `StoreError`.
    func completion<T: Sendable>(of pending: PendingWrite<T>) async throws(StoreError) -> T {
        do {
            return try await pending.value
        } catch let error as StoreError {
            throw error
        } catch {
            throw .internal("\(error)")
        }
    }

    func restartExpiry() { scheduleExpiry() }

    private func scheduleExpiry() {
        let task = Task { [weak self] in
            while !Task.isCancelled {
                guard let next = try? self?.nextExpiration() else {
                    try? await Task.sleep(for: .seconds(3600))
                    continue
                }
                let delay = max(0, next.timeIntervalSinceNow)
                try? await Task.sleep(for: .seconds(min(delay, 3600)))
                if Task.isCancelled { return }
                _ = try? await self?.purgeExpired()
            }
        }
        expirySweeper.withLock { previous in
            previous?.cancel()
            previous = task
        }
    }
}

/// Database information, as CouchDB's `GET /{db}` reports it.
public struct DatabaseInfo: Sendable, Hashable {
    /// The database name.
    public var name: String
    /// The database's stable UUID.
    public var uuid: String
    /// Documents whose winning revision is not deleted.
    public var docCount: Int
    /// Documents whose winning revision is a tombstone.
    public var deletedDocCount: Int
    /// The sequence of the last change.
    public var updateSequence: UInt64
    /// How many documents purge requests have named (CouchDB's `purge_seq`).
    public var purgeSequence: UInt64
    /// Bytes on disk: the SQLite file, its WAL, and attachment files.
    public var fileSize: Int
    /// Bytes of live data in the SQLite file (pages in use).
    public var activeSize: Int
    /// When this instance was opened, microseconds since 1970.
    public var instanceStartTime: Int64
}

extension Database {
    /// The document counts, last sequence and sizes.
    public func info() throws(StoreError) -> DatabaseInfo {
        let (values, pages) = try read { db in
            var values: [String: Int64] = [:]
            let select = try db.statement("SELECT key, value FROM meta WHERE key IN ('last_seq', 'doc_count', 'del_count', 'purge_seq')")
            while try select.step() { values[select.string(0)] = select.int64(1) }
            let pageSize = try db.statement("PRAGMA page_size")
            _ = try pageSize.step()
            let size = pageSize.int64(0)
            let freelist = try db.statement("PRAGMA freelist_count")
            _ = try freelist.step()
            let free = freelist.int64(0)
            let count = try db.statement("PRAGMA page_count")
            _ = try count.step()
            return (values, (count.int64(0) - free) * size)
        }
        let fileManager = FileManager.default
        let fileSize = [path, path + "-wal"].reduce(0) { sum, file in
            sum + ((try? fileManager.attributesOfItem(atPath: file)[.size] as? Int) ?? 0)
        } + attachments.totalSize()
        return DatabaseInfo(
            name: name, uuid: uuid,
            docCount: Int(values["doc_count"] ?? 0),
            deletedDocCount: Int(values["del_count"] ?? 0),
            updateSequence: UInt64(values["last_seq"] ?? 0),
            purgeSequence: UInt64(values["purge_seq"] ?? 0),
            fileSize: fileSize,
            activeSize: Int(pages),
            instanceStartTime: instanceStartTime
        )
    }

    /// The sequence of the last committed change.
    public func lastSequence() throws(StoreError) -> UInt64 {
        try read { db in
            let select = try db.statement("SELECT value FROM meta WHERE key = 'last_seq'")
            return try select.step() ? UInt64(select.int64(0)) : 0
        }
    }
}

extension StoreError {
    /// 413 too_large for a document with more than ``Database/maximumAttachments`` attachments.
    public static let tooManyAttachments = StoreError(
        .tooLarge, error: "too_large", reason: "A document may have at most \(Database.maximumAttachments) attachments.")
}

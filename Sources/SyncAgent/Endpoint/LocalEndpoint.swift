import JSON
import Store

/// A database of this process's store as one side of a replication.
public struct LocalEndpoint: Endpoint {
    /// The database.
    public let database: Database
    /// What is written here is marked relayed (``Database/bulkDocs(_:newEdits:relayed:)``):
    /// the target of a pull from a group member.
    public let writesRelayed: Bool
    /// Whom the writes here are for, as design documents' `validate_doc_update` sees them:
    /// the server for a replication it runs, the peer for a pull from a peer (as when the
    /// peer pushes the same revisions through the listener).
    public let author: WriteAuthor

    /// The endpoint of `database`; `writesRelayed`: it is the target of a pull from a group member.
    public init(_ database: Database, writesRelayed: Bool = false, author: WriteAuthor = .server) {
        self.database = database
        self.writesRelayed = writesRelayed
        self.author = author
    }

    /// "local database NAME".
    public var displayName: String { "local database \(database.name)" }

    /// Always true.
    public var isLocal: Bool { true }

    /// Nothing to check: the database is open.
    public func prepare(createIfMissing: Bool) async throws(EndpointError) {}

    /// `db:` and the database's UUID.
    public func identity() async throws(EndpointError) -> String { "db:" + database.uuid }

    /// Reads `_local/<id>` from the store.
    public func localDocument(id: String) async throws(EndpointError) -> JSON? {
        do {
            return try database.localDocument(id: "_local/" + id).json
        } catch where error.kind == .notFound {
            return nil
        } catch {
            throw EndpointError(error, endpoint: displayName)
        }
    }

    /// Writes `_local/<id>` to the store; a stale `_rev` is a 409.
    public func putLocalDocument(id: String, _ json: JSON) async throws(EndpointError) -> String {
        do {
            return try await database.putLocal(id: "_local/" + id, json).description
        } catch {
            throw EndpointError(error, endpoint: displayName)
        }
    }

    /// Reads the design document from the store.
    public func filterFunction(_ name: String) async throws(EndpointError) -> String {
        guard let (design, _) = ReplicationFilter.designFunction(name) else { return try filterFunction(name, in: nil) }
        return try filterFunction(name, in: try? database.document(id: design).json())
    }

    /// Pages of the store's changes (all leaves), then, when continuous, a page after each commit.
    /// A filter function runs here, on the source, as CouchDB runs it on its own feed.
    public func changes(_ request: ChangeFeedRequest, deliver: @Sendable (ChangeBatch) async throws -> Void) async throws {
        // Subscribe before the first read, so no commit falls between reading and waiting.
        var commits = database.commits().makeAsyncIterator()
        var options = ChangesOptions(since: request.since.localNumber ?? 0)
        options.allLeaves = true
        options.firstHandOnly = request.firstHandOnly
        let limit = max(1, request.batchSize)
        options.limit = limit
        var function: (design: String, name: String, request: JSON)?
        switch request.filter {
        case .documentIDs(let ids)?: options.documentIDs = Set(ids)
        case .selector(let json)?:
            do { options.selector = try Selector(json) } catch { throw EndpointError(error, endpoint: displayName) }
        case .function(let name, let parameters)?:
            guard let (design, filter) = ReplicationFilter.designFunction(name) else { _ = try filterFunction(name, in: nil); return }
            function = (design, filter, Self.filterRequest(database, query: parameters, author: author))
        case nil: break
        }
        while true {
            try Task.checkCancellation()
            let page: ChangesPage
            do { page = try await database.changesPage(options) } catch { throw EndpointError(error, endpoint: displayName) }
            let caughtUp = page.changes.count < limit || page.pending == 0
            var changes = page.changes
            if let function {
                do {
                    changes = try await database.filter(changes, by: .filter(function.name), of: function.design, request: function.request, allLeaves: true)
                } catch {
                    throw EndpointError(error, endpoint: displayName)
                }
            }
            let rows = changes.map {
                ChangedDocument(sequence: ChangeSequence($0.sequence), id: $0.id, revisions: $0.revisions, deleted: $0.deleted)
            }
            try await deliver(ChangeBatch(changes: rows, lastSequence: ChangeSequence(page.lastSequence), pending: page.pending, caughtUp: caughtUp))
            options.since = page.lastSequence
            if caughtUp {
                guard request.continuous else { return }
                guard await commits.next() != nil else { throw CancellationError() }
            }
        }
    }

    /// The store's winners of the documents written lately.
    public var recentWinners: (@Sendable (_ revision: RevisionID, _ id: String) -> Bool)? {
        { [database] revision, id in database.isRecentWinner(revision, of: id) }
    }

    /// The same, asked with a revision's text.
    public var recentWinnerTexts: ChangeFeedRequest.TargetWinners? {
        { [database] revision, id in database.isRecentWinner(text: revision, of: id) }
    }

    /// The store's `revsDiff`.
    public func missingRevisions(_ revisions: [DocumentRevisions]) async throws(EndpointError) -> [MissingRevisions] {
        do {
            return try database.revsDiff(revisions.map { ($0.id, $0.revisions) }).map {
                MissingRevisions(id: $0.id, missing: $0.missing, possibleAncestors: $0.possibleAncestors)
            }
        } catch {
            throw EndpointError(error, endpoint: displayName)
        }
    }

    /// Reads each missing revision (`latest`), delivering each as it is read. Attachments
    /// the other side lacks go as their stored files, pinned until the revision is dropped;
    /// `staging` is not needed, the content being in files already.
    public func revisions(_ requests: [MissingRevisions], staging: AttachmentStaging,
                          deliver: (FetchedRevision) async -> Void) async throws(EndpointError) {
        for request in requests {
            let answers: [OpenRevision]
            do {
                answers = try database.openRevisions(id: request.id, revisions: request.missing, latest: true)
            } catch where error.kind == .notFound {
                for revision in request.missing { await deliver(.missing(id: request.id, revision: revision)) }
                continue
            } catch {
                await deliver(.failed(id: request.id, revision: request.missing.first, reason: error.description))
                continue
            }
            for answer in answers {
                switch answer {
                case .missing(let revision):
                    await deliver(.missing(id: request.id, revision: revision))
                case .found(let document):
                    await deliver(render(document, knownAncestors: request.possibleAncestors, inline: staging.isInline))
                }
            }
        }
    }

    /// The revision's JSON with `_revisions`, attachments the other side has as stubs and the
    /// rest following as their files (or, when asked, inline).
    private func render(_ document: DocumentRevision, knownAncestors: [RevisionID], inline: Bool) -> FetchedRevision {
        let cutoff = AttachmentCutoff(history: document.history, knownAncestors: knownAncestors)
        var files: [String: AttachmentFile] = [:]
        var unreadable: StoreError?
        let json = document.json(inline ? [.revisions] : [.revisions, .encodingInfo]) { attachment in
            if cutoff.targetHas(attachment) { return .stub }
            do throws(StoreError) {
                if inline { return .data(try database.attachmentContent(attachment)) }
                let pinned = try database.pinAttachment(attachment)
                files[attachment.name] = AttachmentFile(path: database.stagedPath(pinned), staged: pinned) { [database] in
                    database.discardStaged(pinned)
                }
                return .follows
            } catch {
                unreadable = error
                return .stub
            }
        }
        if let unreadable {
            return .failed(id: document.id, revision: document.revision, reason: unreadable.description)
        }
        return .found(ReplicatedRevision(id: document.id, revision: document.revision,
                                         json: json, files: files))
    }

    /// This database's own store: content staged there is written without a copy.
    public func attachmentStaging() async throws(EndpointError) -> AttachmentStaging { .database(database) }

    /// `bulkDocs` with `newEdits: false` (marked relayed when ``writesRelayed``); attachment
    /// files from another store are copied into this one first.
    public func write(_ revisions: [ReplicatedRevision]) async throws(EndpointError) -> [WriteFailure] {
        do {
            var uploads: [DocumentUpload] = []
            uploads.reserveCapacity(revisions.count)
            for revision in revisions {
                var staged: [String: StagedAttachment] = [:]
                for (name, file) in revision.files {
                    if file.path == database.stagedPath(file.staged) {
                        staged[name] = file.staged
                    } else {
                        staged[name] = try await database.stageAttachment(file.chunks(), limit: .max)
                    }
                }
                uploads.append(DocumentUpload(revision.json, staged: staged))
            }
            let results = try await database.bulkDocs(uploads, newEdits: false, relayed: writesRelayed, author: author)
            return results.compactMap { result in
                guard case .failure(let error) = result.result else { return nil }
                return WriteFailure(id: result.id, error: error.error, reason: error.reason)
            }
        } catch let error as StoreError {
            throw EndpointError(error, endpoint: displayName)
        } catch {
            throw .badResponse(displayName, "cannot copy an attachment file: \(error)")
        }
    }

    /// Waits until the store's commits so far would survive a power cut.
    public func ensureFullCommit() async throws(EndpointError) {
        do {
            try await database.ensureFullCommit()
        } catch {
            throw EndpointError(error, endpoint: displayName)
        }
    }
}

extension LocalEndpoint {
    /// CouchDB's `req` for a filter function on `database`'s changes: by default as a
    /// replication this node runs asks (`GET`, its query parameters, the server or peer it
    /// runs for); the listener gives a client's request's own method, path, headers and body.
    static func filterRequest(_ database: Database, query: JSON.Object, author: WriteAuthor, method: String = "GET",
                              path: [JSON]? = nil, rawPath: String? = nil, headers: JSON.Object = [:], body: JSON = "undefined",
                              peer: String = "127.0.0.1") -> JSON {
        let path = path ?? [.string(database.name), "_changes"]
        return [
            "info": ["db_name": .string(database.name), "update_seq": .number(Double((try? database.lastSequence()) ?? 0))],
            "id": .null,
            "method": .string(method),
            "requested_path": .array(path),
            "path": .array(path),
            "raw_path": .string(rawPath ?? "/" + database.name + "/_changes"),
            "query": .object(query),
            "headers": .object(headers),
            "body": body,
            "peer": .string(peer),
            "form": [:],
            "cookie": [:],
            "userCtx": author.userContext(database: database.name),
            "secObj": (try? database.security()) ?? nil ?? [:],
        ]
    }
}

/// CouchDB's `atts_since` rule: an attachment whose `revpos` is at or below the
/// newest ancestor the other side has is already there, and goes as a stub.
struct AttachmentCutoff {
    let generation: Int

    init(history: [RevisionID], knownAncestors: [RevisionID]) {
        let known = Set(knownAncestors)
        generation = history.first(where: { known.contains($0) })?.generation ?? 0
    }

    func targetHas(_ attachment: Attachment) -> Bool { attachment.revpos <= generation }
}

import ArgumentParser
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import JSON
import Locking
import Logging
import Store
import SyncAgent
import UnixSignals

/// Replicates one database to another: local databases by name, remote ones by URL.
struct ReplicateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replicate",
        abstract: "Replicate SOURCE to TARGET by the CouchDB replication protocol.",
        discussion: """
            Each side is a database name in the data directory (created if it is the target and missing) \
            or an http(s) URL such as http://user:password@host:5984/db. Progress goes to standard output: \
            a live line on a terminal, plain lines otherwise. Exits 0 when every document was replicated, \
            1 when the replication failed, 2 when it finished but some documents could not be replicated. \
            A continuous replication runs until SIGINT or SIGTERM and checkpoints before it exits.
            """
    )

    @Argument(help: "Where documents come from: a database name or a URL.")
    var source: String

    @Argument(help: "Where documents go: a database name or a URL.")
    var target: String

    @Flag(help: "Keep replicating new changes until stopped.")
    var continuous = false

    @Option(help: "Only documents matching this Mango selector (JSON).")
    var selector: String?

    @Option(name: .customLong("doc-ids"), parsing: .upToNextOption, help: "Only these documents (separated by spaces or commas).",
            transform: { $0.split(separator: ",").map(String.init) })
    var documentIDs: [[String]] = []

    @Option(help: "Only revisions this filter function of the source passes: DESIGN/NAME, filters.NAME of _design/DESIGN (it runs on the source, as CouchDB's replicator runs it).")
    var filter: String?

    @Option(name: .customLong("query-params"), help: "The filter function's req.query (a JSON object).")
    var queryParams: String?

    @Option(name: .customLong("batch-size"), help: "Changes per batch.")
    var batchSize = 500

    @Flag(name: .customLong("create-target"), help: "Create a remote target database if it is missing.")
    var createTarget = false

    @Option(name: .customLong("fingerprint"), help: "Trust an HTTPS side only if its certificate has this SHA-256 fingerprint.")
    var fingerprint: String?

    @Option(name: .customLong("peer"), help: "A paired peer's ID (or name): trust its certificate alone, key the checkpoints by its UUID, and authenticate with this node's certificate (mutual TLS, no password).")
    var peer: String?

    @Option(name: .customLong("peer-uuid"), help: "The remote node's UUID, when known (discovery, pairing): keys the checkpoints once the server's GET / uuid matches it.")
    var peerUUID: String?

    @Option(name: .customLong("checkpoint-interval"), help: "Seconds between checkpoints while running.")
    var checkpointInterval = 5.0

    @OptionGroup var log: LogOptions
    @OptionGroup var data: DataOptions
    @OptionGroup var control: ControlOptions

    func validate() throws {
        guard batchSize >= 1 else { throw ValidationError("--batch-size must be at least 1") }
        guard checkpointInterval > 0 else { throw ValidationError("--checkpoint-interval must be positive") }
        guard documentIDs.allSatisfy({ !$0.isEmpty }) else { throw ValidationError("--doc-ids names no document") }
        guard [selector != nil, !documentIDs.isEmpty, filter != nil].filter({ $0 }).count <= 1 else {
            throw ValidationError("give one of --selector, --doc-ids and --filter")
        }
        if let filter, ReplicationFilter.designFunction(filter) == nil {
            throw ValidationError("--filter must be DESIGN/NAME: a filter function of the source's design document _design/DESIGN")
        }
        if let queryParams {
            guard filter != nil else { throw ValidationError("--query-params goes with --filter") }
            guard let json = try? JSON(parsing: queryParams), json.objectValue != nil else {
                throw ValidationError("--query-params must be a JSON object")
            }
        }
        if let selector {
            guard let json = try? JSON(parsing: selector), json.objectValue != nil else {
                throw ValidationError("--selector must be a JSON object")
            }
        }
        if peer != nil {
            guard [source, target].contains(where: { $0.lowercased().hasPrefix("https://") }) else {
                throw ValidationError("--peer needs the peer's https URL as source or target")
            }
            guard fingerprint == nil, peerUUID == nil else { throw ValidationError("--peer already gives the fingerprint and UUID") }
        }
        for side in [source, target] where !EndpointResolver.isURL(side) && !Catalog.isValidName(side) {
            throw ValidationError("'\(RemoteURL.redact(side))' is neither an http(s) URL nor a valid database name")
        }
    }

    func run() async throws {
        let logger = log.logger(label: "syncd.replicate", defaultLevel: .warning)
        // Trapped from the start: a signal while the sides are still being opened stops it cleanly too.
        let stops = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        var trust = EndpointResolver.RemoteTrust(fingerprint: fingerprint, peerUUID: peerUUID)
        if let peer {
            // Only read here, never written: the data directory may be a running agent's. Both files
            // are replaced whole when written, so a read sees one version or the other.
            let found = try PeerStore(directory: data.path).find(peer)
            guard found.count == 1 else {
                throw Self.failure(found.isEmpty ? "no paired peer matches \(peer) (see syncd peers)" : "\(peer) matches \(found.count) peers; give more of the ID")
            }
            // A paired node has its identity: it is loaded, never made, here.
            guard NodeIdentity.exists(in: data.path) else { throw Self.failure("no node identity in \(data.path), which has peers") }
            trust.peer = (found[0], try NodeIdentity.loadOrCreate(in: data.path))
        }
        let sides = EndpointResolver(directory: data.path, controlSocket: control.path(data: data), trust: trust, logger: logger)
        var configuration: ReplicationConfiguration
        do {
            configuration = ReplicationConfiguration(source: try sides.endpoint(source, isTarget: false),
                                                     target: try sides.endpoint(target, isTarget: true))
        } catch {
            await sides.close()
            throw Self.failure(String(describing: error))
        }
        configuration.continuous = continuous
        configuration.batchSize = batchSize
        // A local target is created when missing, also when a running agent writes it.
        configuration.createTarget = createTarget || !EndpointResolver.isURL(target)
        configuration.checkpointInterval = .milliseconds(Int(checkpointInterval * 1000))
        if let selector { configuration.filter = .selector(try JSON(parsing: selector)) }
        if !documentIDs.isEmpty { configuration.filter = .documentIDs(documentIDs.flatMap { $0 }) }
        if let filter {
            configuration.filter = .function(name: filter, queryParameters: try queryParams.map { try JSON(parsing: $0).objectValue ?? [:] } ?? [:])
        }

        let replicator = Replicator(configuration, logger: logger)
        let printer = ProgressPrinter(live: isatty(STDOUT_FILENO) != 0)
        let final = await withTaskGroup(of: ReplicationStatus?.self) { group in
            group.addTask {
                for await status in replicator.statusUpdates() { printer.show(status) }
                return nil
            }
            group.addTask { await replicator.run() }
            group.addTask {
                for await _ in stops {
                    await replicator.stop()
                    break
                }
                return nil
            }
            var final: ReplicationStatus?
            for await result in group {
                if let result {
                    final = result
                    group.cancelAll()
                }
            }
            return final ?? replicator.status
        }
        await sides.close()
        printer.finish(final)
        if let error = final.lastError, error.error == "certificate_untrusted" {
            throw Self.failure("\(error.endpoint): \(error.reason). If that is the node ID `syncd id` prints on that machine, "
                               + "run again with --fingerprint and that ID; for a paired peer, use --peer and its name instead.")
        }
        if let error = final.lastError { throw Self.failure("replication failed: \(error)") }
        if final.docWriteFailures > 0 {
            throw Self.failure("\(final.docWriteFailures) document(s) could not be replicated", code: 2)
        }
    }

    private static func failure(_ message: String, code: Int32 = 1) -> ExitCode {
        StandardStream.error.write("error: " + RemoteURL.redact(message) + "\n")
        return ExitCode(code)
    }
}

/// Shows replication progress: one rewritten line on a terminal, plain lines
/// (at most one a second, and every change of state) otherwise.
final class ProgressPrinter: Sendable {
    private let live: Bool
    private let last = Locked<(time: ContinuousClock.Instant, activity: ReplicationActivity)?>(nil)
    private let lastLine = Locked<String?>(nil)

    init(live: Bool) { self.live = live }

    func show(_ status: ReplicationStatus) {
        // The status before the start says nothing yet.
        if status.activity == .stopped && last.withLock({ $0 == nil }) { return }
        let now = ContinuousClock.now
        let due = last.withLock { last in
            let due = last == nil || last!.activity != status.activity || now - last!.time >= (live ? .milliseconds(100) : .seconds(1))
            if due { last = (now, status.activity) }
            return due
        }
        guard due else { return }
        write(Self.line(status), final: false)
    }

    func finish(_ status: ReplicationStatus) {
        let line = Self.line(status)
        let repeated = lastLine.withLock { $0 == line }
        if live || !repeated { write(line, final: true) }
    }

    private func write(_ line: String, final: Bool) {
        lastLine.withLock { $0 = line }
        let text = live ? "\r\u{1B}[K" + line + (final ? "\n" : "") : line + "\n"
        StandardStream.output.write(text)
    }

    static func line(_ status: ReplicationStatus) -> String {
        var line = "\(status.activity.rawValue): \(status.completed)/\(status.total) changes, read \(status.docsRead), written \(status.docsWritten)"
        if status.docWriteFailures > 0 { line += ", failed \(status.docWriteFailures)" }
        if status.checkpointOnTargetOnly { line += ", checkpoint on the target only (the source is read-only)" }
        if status.activity == .offline, let error = status.lastError { line += " (\(error))" }
        return line
    }
}

import ArgumentParser
import Foundation
import JSON
import Store
import SyncAgent

/// Opens (or creates) a database in the data directory and prints its info:
/// through the running agent when one owns the directory.
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Open or create a database in the data directory and print its info."
    )

    @OptionGroup var data: DataOptions
    @OptionGroup var control: ControlOptions

    @Option(help: "Database name.")
    var database = "syncd"

    func validate() throws {
        guard Catalog.isValidName(database) else { throw ValidationError("'\(database)' is not a valid database name") }
    }

    func run() async throws {
        let info: (uuid: String, documents: Int, deleted: Int, sequence: String, size: Int)
        if DataDirectoryLock.isHeld(data.path) {
            let agent = ControlClient(socketPath: control.path(data: data))
            _ = try await agent.request(.PUT, "/" + database)  // 412 when it exists
            let (status, body) = try await agent.request(.GET, "/" + database)
            let json = try JSON(parsing: body.readableBytesView)
            guard status == 200 else { throw ValidationError("the agent answered \(status): \(json["reason"]?.stringValue ?? "")") }
            info = (json["uuid"]?.stringValue ?? "", json["doc_count"]?.intValue ?? 0, json["doc_del_count"]?.intValue ?? 0,
                    json["update_seq"].map { $0.stringValue ?? $0.serialized() } ?? "", json["sizes"]?["file"]?.intValue ?? 0)
        } else {
            let lock = try DataDirectoryLock(directory: data.path)
            let catalog = try Catalog(directory: data.path)
            defer {
                catalog.close()
                _ = lock
            }
            let local = try catalog.openOrCreate(database).info()
            info = (local.uuid, local.docCount, local.deletedDocCount, String(local.updateSequence), local.fileSize)
        }
        print("""
            data directory: \(data.path)
            database:       \(database)
            uuid:           \(info.uuid)
            documents:      \(info.documents) (\(info.deleted) deleted)
            update_seq:     \(info.sequence)
            size on disk:   \(info.size) bytes
            """)
    }
}

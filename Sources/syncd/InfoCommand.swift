import ArgumentParser
import FoundationEssentials
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
        let info = try await withNode(data, control) { try await $0.control.openDatabase(database) }
        print("""
            data directory: \(data.path)
            database:       \(database)
            uuid:           \(info.uuid)
            documents:      \(info.documents) (\(info.deleted) deleted)
            update_seq:     \(info.updateSequence)
            size on disk:   \(info.size) bytes
            """)
    }
}

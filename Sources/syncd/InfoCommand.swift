import ArgumentParser
import Store

/// Opens (or creates) the store in the data directory and prints its info.
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Open or create a database in the data directory and print its info."
    )

    @OptionGroup var data: DataOptions

    @Option(help: "Database name.")
    var database = "syncd"

    func run() async throws {
        let catalog = try Catalog(directory: data.path)
        defer { catalog.close() }
        let db = try catalog.openOrCreate(database)
        let info = try db.info()
        print("""
            data directory: \(data.path)
            database:       \(info.name)
            uuid:           \(info.uuid)
            documents:      \(info.docCount) (\(info.deletedDocCount) deleted)
            update_seq:     \(info.updateSequence)
            size on disk:   \(info.fileSize) bytes
            """)
    }
}

import ArgumentParser
import Discovery
import Dispatch
import FoundationEssentials
import SyncAgent
import UnixSignals

/// Advertises an existing listener on the LAN until stopped (SIGINT or SIGTERM withdraws it).
struct AdvertiseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertise",
        abstract: "Advertise a syncd listener on the LAN (Avahi DNS-SD) until stopped.",
        discussion: "Keeps the service published across avahi-daemon restarts and name collisions."
    )

    @Option(help: "The listener's TCP port.")
    var port: UInt16

    @Option(help: "The node's UUID.")
    var uuid: String

    @Option(help: "The database the listener serves.")
    var database: String

    @Flag(help: "The listener speaks HTTPS.")
    var tls = false

    @Option(help: "SHA-256 fingerprint of the listener's certificate (with --tls).")
    var fingerprint: String?

    @Option(help: "The DNS-SD service type.")
    var type = ServiceType.syncd.name

    @Option(help: "The instance name (default: 'syncd on HOST (UUID prefix)').")
    var name: String?

    @Flag(help: "Print JSON, one object per line.")
    var json = false

    func validate() throws {
        if tls && fingerprint == nil { throw ValidationError("--tls needs --fingerprint") }
        if !tls && fingerprint != nil { throw ValidationError("--fingerprint needs --tls") }
    }

    func run() async throws {
        let advertisement = try Advertisement.syncd(
            uuid: uuid, database: database, port: port, tls: tls, fingerprint: fingerprint,
            name: name, type: try ServiceType(type)
        )
        let advertiser = try Advertiser(advertisement)
        let output = EventPrinter(json: json)
        let events = advertiser.events()
        let statuses = advertiser.statusUpdates()
        advertiser.publish()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await status in statuses { output.status(status) } }
            group.addTask { for await event in events { output.advertiserEvent(event) } }
            group.addTask {
                await Signals.first(of: .sigint, .sigterm)
                advertiser.close()
            }
        }
    }
}

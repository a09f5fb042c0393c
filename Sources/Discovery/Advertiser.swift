import Locking
import Logging

/// Publishes one service, of any type and with any TXT, on the LAN through avahi-daemon.
///
/// It keeps the service published by itself: a name collision picks another name
/// (``Advertisement/collisionTag``, then `name #2`) and registers again, and a daemon
/// that restarts or starts late gets the service re-registered. Port and TXT changes go
/// out in place, without withdrawing the service.
///
/// ```swift
/// let advertiser = try Advertiser(Advertisement(type: .syncd, name: "notes on alpha", port: port, txt: ["db": "notes"]))
/// advertiser.publish()
/// try advertiser.update(port: newPort)
/// ```
public final class Advertiser: Sendable {
    private let session: AdvertiserSession

    /// Connects to avahi-daemon (or starts waiting for it); nothing is published before ``publish()``.
    public init(_ advertisement: Advertisement, logger: Logger = Logger(label: "syncd.discovery")) throws(DiscoveryError) {
        session = try AdvertiserSession(advertisement, logger: logger)
        session.start()
    }

    deinit {
        session.close()
    }

    /// Starts advertising; while the daemon is unavailable the service goes out once it is back.
    public func publish() {
        _ = session.withPollLock { session.publish() }
    }

    /// Withdraws the service (peers get a goodbye); ``publish()`` brings it back.
    public func withdraw() {
        _ = session.withPollLock { session.withdraw() }
    }

    /// Replaces what is advertised. A new port or TXT is announced in place; a new name or type
    /// withdraws the old service and registers the new one.
    public func update(_ advertisement: Advertisement) {
        _ = session.withPollLock { session.update(to: advertisement) }
    }

    /// Changes the port and/or merges `txt` into the TXT record (a nil value removes a key).
    public func update(port: UInt16? = nil, txt: [String: String?] = [:]) throws(DiscoveryError) {
        let rejected: DiscoveryError?? = session.withPollLock {
            var next = session.advertisement
            if let port { next.port = port }
            for (key, value) in txt { next.txt[key.lowercased()] = value }
            do throws(DiscoveryError) {
                try Advertisement.validate(txt: next.txt)
            } catch {
                return error
            }
            session.update(to: next)
            return nil
        }
        if case let error?? = rejected { throw error }
    }

    /// What is advertised now (with the name asked for, see ``name`` for the one in use).
    public var advertisement: Advertisement {
        session.snapshot.withLock { $0.advertisement }
    }

    /// The instance name in use: the one asked for, or the alternative chosen after a collision.
    public var name: String {
        session.snapshot.withLock { $0.name }
    }

    /// Whether avahi-daemon can be reached now, and why not if it cannot.
    public var status: DiscoveryStatus { session.currentStatus }

    /// Status changes, starting with the current status.
    public func statusUpdates() -> AsyncStream<DiscoveryStatus> { session.statusUpdates() }

    /// Registration progress from now on: registering, established, renamed, withdrawn, failed.
    public func events() -> AsyncStream<AdvertiserEvent> {
        session.withPollLock { session.events.subscribe() } ?? AsyncStream { $0.finish() }
    }

    /// Withdraws the service and disconnects from avahi; also done when the advertiser is released.
    public func close() {
        session.close()
    }
}

/// Registration progress of an ``Advertiser``.
public enum AdvertiserEvent: Sendable, Hashable, CustomStringConvertible {
    /// The service was handed to avahi-daemon under `name`, which now probes the LAN for it.
    case registering(name: String)
    /// The service is established on the LAN under `name`.
    case established(name: String)
    /// `from` was taken on the LAN (or by another local service); registering as `to`.
    case renamed(from: String, to: String)
    /// The service was withdrawn on request.
    case withdrawn
    /// Avahi refused the service; the message says why.
    case failed(String)

    /// A one-line summary for logs and the command line.
    public var description: String {
        switch self {
        case .registering(let name): "registering '\(name)'"
        case .established(let name): "established '\(name)'"
        case .renamed(let from, let to): "name '\(from)' taken, renamed to '\(to)'"
        case .withdrawn: "withdrawn"
        case .failed(let message): "failed: \(message)"
        }
    }
}

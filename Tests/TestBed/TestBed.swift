import Foundation
import Synchronization

/// Several "hosts" on one machine for discovery tests: each host is a network namespace
/// with its own /run, D-Bus system bus and avahi-daemon, linked to the others by a bridge
/// in a namespace of its own. mDNS never leaves these namespaces.
///
/// Every name carries a per-run prefix (`sdt<pid>x<random>`). Teardown runs from
/// ``shutdown()`` (``TestBed/with(hosts:ipv6:startAvahi:startDBus:_:)`` always calls it), from
/// a reaper process if the test process dies, and for leftovers of dead runs at the next start.
public final class TestBed: Sendable {
    /// The hosts, named `a`, `b`, `c`, …
    public let hosts: [TestHost]
    /// The per-run prefix of every namespace.
    public let runID: String
    let stateDirectory: String
    private let bridgeNamespace: String
    private let reaper: Mutex<ChildProcess?>

    /// The prefix of every test-bed namespace, for stale cleanup.
    static let prefix = "sdt"
    static let stateRoot = "/tmp/syncd-testbed"

    /// Builds a bed with `hosts` hosts, runs `body`, and tears everything down, errors included.
    public static func with<T>(
        hosts count: Int, ipv6: Bool = false, startAvahi: Bool = true, startDBus: Bool = true,
        _ body: (TestBed) async throws -> T
    ) async throws -> T {
        let bed = try TestBed(hosts: count, ipv6: ipv6, startAvahi: startAvahi, startDBus: startDBus)
        defer { bed.shutdown() }
        return try await body(bed)
    }

    /// Builds a bed; call ``shutdown()`` when done (``with(hosts:ipv6:startAvahi:startDBus:_:)`` does).
    public init(hosts count: Int, ipv6: Bool = false, startAvahi: Bool = true, startDBus: Bool = true) throws {
        guard getuid() == 0 else { throw TestBedError.unsupported("network namespaces need root") }
        for tool in ["/usr/sbin/ip", "/usr/bin/nsenter", "/usr/bin/unshare", "/usr/bin/dbus-daemon", "/usr/sbin/avahi-daemon"] {
            guard FileManager.default.isExecutableFile(atPath: tool) else { throw TestBedError.unsupported("\(tool) is missing") }
        }
        Self.removeStale()
        let runID = "\(Self.prefix)\(getpid())x\(String(UInt16.random(in: 0...UInt16.max), radix: 16))"
        let stateDirectory = "\(Self.stateRoot)/\(runID)"
        let bridgeNamespace = "\(runID)-br"
        self.runID = runID
        self.stateDirectory = stateDirectory
        self.bridgeNamespace = bridgeNamespace
        let names = (0..<count).map { String(UnicodeScalar(UInt8(ascii: "a") + UInt8($0))) }
        let namespaces = names.map { "\(runID)-\($0)" }
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        let reaperProcess = try Self.startReaper(namespaces: [bridgeNamespace] + namespaces, state: stateDirectory)
        reaper = Mutex(reaperProcess)
        var hosts: [TestHost] = []
        do {
            try runCommand(["/usr/sbin/ip", "netns", "add", bridgeNamespace])
            try Self.ip(bridgeNamespace, "link", "set", "lo", "up")
            try Self.ip(bridgeNamespace, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
            try Self.ip(bridgeNamespace, "link", "set", "br0", "up")
            for (index, name) in names.enumerated() {
                hosts.append(try TestHost(
                    name: name, namespace: namespaces[index], bridgeNamespace: bridgeNamespace, index: index,
                    ipv6: ipv6, stateDirectory: "\(stateDirectory)/\(name)"
                ))
            }
            self.hosts = hosts
            if startDBus { for host in hosts { try host.startDBus() } }
            if startDBus && startAvahi {
                for host in hosts { try host.launchAvahi() }
                for host in hosts { try host.waitForAvahi() }
            }
        } catch {
            Self.teardown(hosts: hosts, namespaces: [bridgeNamespace] + namespaces, state: stateDirectory)
            reaperProcess.stop(grace: .zero)
            throw error
        }
    }

    /// The host named `name` (`"a"`, `"b"`, …).
    public subscript(name: String) -> TestHost {
        hosts.first { $0.name == name }!
    }

    /// Stops every process, deletes every namespace and the state directory. Idempotent.
    public func shutdown() {
        Self.teardown(hosts: hosts, namespaces: [bridgeNamespace] + hosts.map(\.namespace), state: stateDirectory)
        reaper.withLock { reaper in
            reaper?.signal(SIGKILL)
            reaper?.waitForExit(timeout: .seconds(2))
            reaper = nil
        }
    }

    static func ip(_ namespace: String, _ arguments: String...) throws {
        try runCommand(["/usr/sbin/ip", "-n", namespace] + arguments)
    }

    private static func teardown(hosts: [TestHost], namespaces: [String], state: String) {
        for host in hosts { host.stopAll() }
        for namespace in namespaces { killAll(in: namespace) }
        for host in hosts { host.reapHolder() }
        for namespace in namespaces {
            _ = try? runCommand(["/usr/sbin/ip", "netns", "del", namespace], check: false)
        }
        try? FileManager.default.removeItem(atPath: state)
    }

    /// Kills (SIGKILL) every process whose network namespace is `namespace`: only the
    /// test bed's own holders, daemons and commands live there.
    private static func killAll(in namespace: String) {
        guard let pids = try? runCommand(["/usr/sbin/ip", "netns", "pids", namespace], check: false) else { return }
        for pid in pids.output.split(whereSeparator: \.isNewline).compactMap({ Int32($0) }) {
            kill(pid, SIGKILL)
        }
    }

    /// Deletes namespaces and state left by runs whose process is gone (crashed or killed).
    static func removeStale() {
        guard let list = try? runCommand(["/usr/sbin/ip", "netns", "list"], check: false) else { return }
        let namespaces = list.output.split(whereSeparator: \.isNewline).compactMap { $0.split(separator: " ").first.map(String.init) }
        for namespace in namespaces where namespace.hasPrefix(prefix) {
            guard let owner = ownerPID(namespace), kill(owner, 0) != 0, errno == ESRCH else { continue }
            killAll(in: namespace)
            _ = try? runCommand(["/usr/sbin/ip", "netns", "del", namespace], check: false)
        }
        for directory in (try? FileManager.default.contentsOfDirectory(atPath: stateRoot)) ?? [] {
            guard let owner = ownerPID(directory), kill(owner, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(atPath: "\(stateRoot)/\(directory)")
        }
    }

    private static func ownerPID(_ name: String) -> Int32? {
        guard name.hasPrefix(prefix), let end = name.firstIndex(of: "x") else { return nil }
        return Int32(name[name.index(name.startIndex, offsetBy: prefix.count)..<end])
    }

    /// A detached shell that tears the bed down if this process dies before ``shutdown()``.
    private static func startReaper(namespaces: [String], state: String) throws -> ChildProcess {
        let script = """
            trap '' INT TERM HUP
            exec >/dev/null 2>&1
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            for ns in \(namespaces.joined(separator: " ")); do
              for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid"; done
              ip netns del "$ns" 2>/dev/null
            done
            rm -rf '\(state)'
            """
        return try ChildProcess(["/bin/sh", "-c", script])
    }

    /// The directory holding the running test bundle or benchmark, where SwiftPM also puts `syncd`.
    public static var productsDirectory: URL {
        URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
            .deletingLastPathComponent()
    }

    /// The built `syncd` executable next to the test bundle.
    public static var syncdExecutable: String {
        get throws {
            let path = productsDirectory.appendingPathComponent("syncd").path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw TestBedError.unsupported("no syncd executable at \(path); build it first (swift build)")
            }
            return path
        }
    }
}

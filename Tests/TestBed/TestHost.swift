import Foundation
import Synchronization

/// One host of a ``TestBed``: a network namespace with interface `eth0` on the bed's bridge,
/// its own /run (so its own D-Bus system bus and avahi-daemon), and a holder process whose
/// mount and UTS namespaces commands enter.
public final class TestHost: Sendable {
    /// The short name: `a`, `b`, …
    public let name: String
    /// The network namespace.
    public let namespace: String
    /// The host name avahi-daemon announces (`<name>host.local` on the LAN).
    public let hostName: String
    /// The host's directory on the real file system; its `run` is the host's /run.
    public let stateDirectory: String
    private let ipv6: Bool
    private let bridgeNamespace: String
    private let holder: ChildProcess
    private let state: Mutex<State>

    private struct State {
        var ipv4: String
        var dbus: ChildProcess?
        var avahi: ChildProcess?
        var avahiLogStart = 0
        var children: [ChildProcess] = []
    }

    init(name: String, namespace: String, bridgeNamespace: String, index: Int, ipv6: Bool, stateDirectory: String) throws {
        self.name = name
        self.namespace = namespace
        self.hostName = "\(name)host"
        self.stateDirectory = stateDirectory
        self.ipv6 = ipv6
        self.bridgeNamespace = bridgeNamespace
        let address = "10.213.0.\(10 + index)"
        state = Mutex(State(ipv4: address))
        for directory in ["run/dbus", "run/avahi-daemon"] {
            try FileManager.default.createDirectory(atPath: "\(stateDirectory)/\(directory)", withIntermediateDirectories: true)
        }
        try runCommand(["/usr/sbin/ip", "netns", "add", namespace])
        try runCommand(["/usr/sbin/ip", "netns", "exec", namespace, "/usr/sbin/sysctl", "-qw",
                        "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0"])
        try TestBed.ip(namespace, "link", "set", "lo", "up")
        try TestBed.ip(bridgeNamespace, "link", "add", "name", "v\(name)", "type", "veth", "peer", "name", "eth0", "netns", namespace)
        try TestBed.ip(bridgeNamespace, "link", "set", "dev", "v\(name)", "master", "br0", "up")
        try TestBed.ip(namespace, "link", "set", "eth0", "multicast", "on", "up")
        try TestBed.ip(namespace, "addr", "add", "\(address)/24", "dev", "eth0")
        let ready = "\(stateDirectory)/run/.holder-ready"
        holder = try ChildProcess([
            "/usr/sbin/ip", "netns", "exec", namespace, "/usr/bin/unshare", "--uts", "--mount", "--propagation", "private",
            "/bin/sh", "-c", "hostname \(hostName) && mount --bind '\(stateDirectory)/run' /run && touch /run/.holder-ready && exec sleep infinity",
        ])
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: ready) {
            guard holder.isRunning, ContinuousClock.now < deadline else {
                throw TestBedError.timedOut("host \(name) holder: \(holder.errorText)")
            }
            usleep(5_000)
        }
    }

    /// The host's current IPv4 address on `eth0`.
    public var ipv4: String { state.withLock { $0.ipv4 } }

    /// Commands in the host use the host's bus, whatever this process's environment says.
    private var ownBus: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/run/dbus/system_bus_socket"] }

    /// Makes avahi clients created later in this process talk to this host's daemon.
    ///
    /// libdbus reads `DBUS_SYSTEM_BUS_ADDRESS` once per process, so the variable names a fixed
    /// symlink (`/tmp/syncd-testbed/sdt<pid>xbus`) that each call re-points at this host's bus socket.
    public func connectThisProcess() throws {
        let link = "\(TestBed.stateRoot)/\(TestBed.prefix)\(getpid())xbus"
        try? FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "\(stateDirectory)/run/dbus/system_bus_socket")
        let address = "unix:path=\(link)"
        if getenv("DBUS_SYSTEM_BUS_ADDRESS").map({ String(cString: $0) }) != address {
            setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1)
        }
    }

    /// The command line prefix that runs a command inside the host.
    public func inside(_ command: [String]) -> [String] {
        ["/usr/bin/nsenter", "-t", String(holder.pid), "-m", "-n", "-u", "--wd=\(stateDirectory)", "--"] + command
    }

    /// Runs `command` inside the host to completion.
    @discardableResult
    public func run(_ command: [String], environment: [String: String] = [:], check: Bool = true, timeout: Duration = .seconds(30)) throws -> CommandResult {
        try runCommand(inside(command), environment: ownBus.merging(environment) { _, new in new }, check: check, timeout: timeout)
    }

    /// Starts `command` inside the host in the background; the bed stops it at teardown.
    public func spawn(_ command: [String], environment: [String: String] = [:]) throws -> ChildProcess {
        let child = try ChildProcess(inside(command), environment: ownBus.merging(environment) { _, new in new })
        state.withLock { $0.children.append(child) }
        return child
    }

    /// Moves `eth0` from its IPv4 address to `address` (in the bed's /24): the old address goes
    /// first. (Adding the new one first leaves peers' avahi caches on the old address until its
    /// 120 s TTL ends, as measured here.)
    public func setIPv4(_ address: String) throws {
        let old = ipv4
        try TestBed.ip(namespace, "addr", "del", "\(old)/24", "dev", "eth0")
        try TestBed.ip(namespace, "addr", "add", "\(address)/24", "dev", "eth0")
        state.withLock { $0.ipv4 = address }
    }

    /// Cuts the host's link (eth0 down).
    public func linkDown() throws {
        try TestBed.ip(namespace, "link", "set", "eth0", "down")
    }

    /// Restores the host's link (eth0 up).
    public func linkUp() throws {
        try TestBed.ip(namespace, "link", "set", "eth0", "up")
    }

    /// Cuts the host off in silence: every packet to or from it is dropped (a `blackhole`
    /// queue on both ends of its link), while the link stays up and sends still succeed.
    public func dropPackets() throws {
        try runCommand(["/usr/sbin/ip", "netns", "exec", namespace, "/usr/sbin/tc", "qdisc", "add", "dev", "eth0", "root", "blackhole"])
        try runCommand(["/usr/sbin/ip", "netns", "exec", bridgeNamespace, "/usr/sbin/tc", "qdisc", "add", "dev", "v\(name)", "root", "blackhole"])
    }

    /// Ends ``dropPackets()``.
    public func passPackets() throws {
        try runCommand(["/usr/sbin/ip", "netns", "exec", namespace, "/usr/sbin/tc", "qdisc", "del", "dev", "eth0", "root"])
        try runCommand(["/usr/sbin/ip", "netns", "exec", bridgeNamespace, "/usr/sbin/tc", "qdisc", "del", "dev", "v\(name)", "root"])
    }

    /// TCP connections the host has opened so far (the kernel's `ActiveOpens`: every
    /// `connect` that sent a SYN, answered or not).
    public func tcpConnectionsOpened() throws -> Int {
        let snmp = try run(["/bin/cat", "/proc/net/snmp"]).output.split(separator: "\n").filter { $0.hasPrefix("Tcp:") }
        guard snmp.count == 2 else { throw TestBedError.unsupported("no Tcp lines in /proc/net/snmp") }
        let (names, values) = (snmp[0].split(separator: " "), snmp[1].split(separator: " "))
        guard let index = names.firstIndex(of: "ActiveOpens"), let count = Int(values[index]) else {
            throw TestBedError.unsupported("no ActiveOpens in /proc/net/snmp")
        }
        return count
    }

    /// Starts the host's D-Bus system bus and waits for its socket.
    public func startDBus() throws {
        let socket = "\(stateDirectory)/run/dbus/system_bus_socket"
        let dbus = try ChildProcess(inside(["/usr/bin/dbus-daemon", "--system", "--nofork", "--nosyslog"]), environment: ownBus)
        state.withLock { $0.dbus = dbus }
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: socket) {
            guard dbus.isRunning, ContinuousClock.now < deadline else {
                throw TestBedError.timedOut("host \(name) dbus-daemon: \(dbus.errorText)")
            }
            usleep(5_000)
        }
    }

    /// Starts the host's avahi-daemon and waits until it has established its host name.
    public func startAvahi() throws {
        try launchAvahi()
        try waitForAvahi()
    }

    /// Stops the host's avahi-daemon (SIGTERM: it sends goodbyes) and waits for it to exit.
    public func stopAvahi() {
        let avahi = state.withLock { state in
            defer { state.avahi = nil }
            return state.avahi
        }
        avahi?.stop()
    }

    /// Kills the host's avahi-daemon with SIGKILL: no goodbyes, as in a crash.
    public func killAvahi() {
        let avahi = state.withLock { state in
            defer { state.avahi = nil }
            return state.avahi
        }
        avahi?.signal(SIGKILL)
        avahi?.waitForExit(timeout: .seconds(5))
    }

    /// Stops and starts the host's avahi-daemon.
    public func restartAvahi() throws {
        stopAvahi()
        try startAvahi()
    }

    /// The avahi-daemon log (its standard error) so far.
    public var avahiLog: String { state.withLock { $0.avahi?.errorText ?? "" } }

    func launchAvahi() throws {
        let config = "\(stateDirectory)/avahi-daemon.conf"
        try """
            [server]
            host-name=\(hostName)
            domain-name=local
            use-ipv4=yes
            use-ipv6=\(ipv6 ? "yes" : "no")
            allow-interfaces=eth0
            enable-dbus=yes
            ratelimit-interval-usec=1000000
            ratelimit-burst=1000

            [wide-area]
            enable-wide-area=no

            [publish]
            publish-hinfo=no
            publish-workstation=no

            [reflector]

            [rlimits]

            """.write(toFile: config, atomically: true, encoding: .utf8)
        let avahi = try ChildProcess(inside([
            "/usr/sbin/avahi-daemon", "--no-drop-root", "--no-chroot", "--no-rlimits", "--no-proc-title", "-f", config,
        ]), environment: ownBus)
        state.withLock { $0.avahi = avahi }
    }

    func waitForAvahi() throws {
        guard let avahi = state.withLock({ $0.avahi }) else { return }
        let deadline = ContinuousClock.now + .seconds(15)
        while !avahi.errorText.contains("Server startup complete") {
            guard avahi.isRunning, ContinuousClock.now < deadline else {
                throw TestBedError.timedOut("host \(name) avahi-daemon did not start: \(avahi.errorText)")
            }
            usleep(10_000)
        }
    }

    func stopAll() {
        let (children, avahi, dbus) = state.withLock { state in
            defer { state.children = []; state.avahi = nil; state.dbus = nil }
            return (state.children, state.avahi, state.dbus)
        }
        for child in children { child.stop(grace: .seconds(2)) }
        avahi?.stop(grace: .seconds(2))
        dbus?.stop(grace: .seconds(1))
    }

    func reapHolder() {
        holder.stop(grace: .zero)
    }
}

import Foundation
import TestBed
import XCTest

/// `syncd agent` in a network namespace of the test's own (`unshare --net`, loopback only
/// until the test adds a veth pair): the kernel's address events reach it, and it does not
/// look at its addresses while nothing changes.
final class AgentAddressWatchTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUp() async throws { directory = try TemporaryDirectory(prefix: "agent-addresses") }
    override func tearDown() async throws { directory.remove() }

    func testTheAgentHearsOfANewAddressFromTheKernelAndDoesNotPoll() async throws {
        guard getuid() == 0 else { throw XCTSkip("needs root: a network namespace and strace") }
        let agent = try await AgentProcess.start(
            in: directory.path + "/a", configuration: AgentTests.configuration(),
            // IPv6 off in it: duplicate address detection would announce addresses late, in the idle window.
            launcher: ["/usr/bin/unshare", "--net", "/bin/sh", "-c",
                       "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 && ip link set lo up && exec \"$@\"", "sh"])
        defer { agent.stop() }
        func inNamespace(_ command: String) throws {
            try runCommand(["/usr/bin/nsenter", "--net=/proc/\(agent.process.pid)/ns/net", "/bin/sh", "-c", command])
        }
        func changed(to address: String) -> Bool {
            agent.process.errorText.split(separator: "\n").contains { $0.contains("this node's addresses changed to") && $0.contains(address) }
        }
        // A first address: seen, so the watch is running and the agent has read its addresses.
        try inNamespace("ip link add d0 type veth peer name d1 && ip addr add 10.77.0.1/24 dev d0 && ip link set d1 up && ip link set d0 up")
        try await agent.waitUntil("the agent sees 10.77.0.1", timeout: .seconds(30)) { changed(to: "10.77.0.1") }

        // Idle: the agent reads its addresses (glibc's getifaddrs opens a netlink socket each
        // time) only when told of a change. The old agent looked once a second.
        let trace = SystemCallTrace(["socket"], in: directory.path)
        let strace = try trace.attach(to: agent.process.pid)
        defer { strace.terminate() }
        try await Task.sleep(for: .seconds(3))
        let reads = { trace.lines.filter { $0.contains("socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE)") }.count }
        XCTAssertEqual(reads(), 0, "the idle agent read its addresses:\n\(trace.lines.joined(separator: "\n"))")

        // A second address: the kernel tells, the agent reads its addresses and reconnects.
        try inNamespace("ip addr add 10.77.0.2/24 dev d0")
        try await agent.waitUntil("the agent sees 10.77.0.2", timeout: .seconds(30)) { changed(to: "10.77.0.2") }
        XCTAssertGreaterThan(reads(), 0, "the trace saw no read of the addresses: it could not have seen a poll")
    }
}

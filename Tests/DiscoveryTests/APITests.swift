import Discovery
import Foundation
import Synchronization
import SyncAgent
import TestBed
import Testing

/// Collects a stream's elements in the background so a test can wait for one.
final class Collector<Element: Sendable>: Sendable {
    private final class Elements: Sendable {
        let list = Mutex<[Element]>([])
    }

    private let elements = Elements()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<Element>) {
        let elements = self.elements
        task = Task { for await element in stream { elements.list.withLock { $0.append(element) } } }
    }

    deinit { task.cancel() }

    var all: [Element] { elements.list.withLock { $0 } }

    @discardableResult
    func wait(timeout: Duration = .seconds(10), for predicate: (Element) -> Bool) async throws -> Element {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = all.first(where: predicate) { return found }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestBedError.timedOut("no matching element; got \(all)")
    }
}

extension MultiHostTests {
    /// The Swift API in this process, as a client of host A's daemon (through A's bus socket).
    @Test func advertiserUpdatesInPlaceAndBrowserSkipsItsOwnNode() async throws {
        try await TestBed.with(hosts: 2) { bed in try await apiScenario(bed) }
    }

    private func apiScenario(_ bed: TestBed) async throws {
        let (a, b) = (bed["a"], bed["b"])
        try a.connectThisProcess()
        let (own, other) = (newUUID(), newUUID())
        _ = try b.advertise(uuid: other, port: 7100)
        let watcher = try b.watchPeers()

        let advertiser = try Advertiser(.syncd(uuid: own, database: "notes", port: 7001, tls: false, name: "API Node"))
        let registration = Collector(advertiser.events())
        advertiser.publish()
        #expect(advertiser.status == .available)
        try await registration.wait { $0 == .established(name: "API Node") }

        let browser = try Browser()
        let seen = Collector(browser.peerEvents(excluding: own))
        try await seen.wait { if case .appeared(let peer) = $0 { peer.uuid == other } else { false } }
        let (appeared, _) = try await watcher.waitForEvent { $0.event == "appeared" && $0.peer?.uuid == own }

        try advertiser.update(txt: ["db": "archive"])
        try await watcher.waitForEvent(from: appeared + 1) {
            $0.event == "changed" && $0.peer?.uuid == own && $0.peer?.database == "archive" && $0.peer?.port == 7001
        }
        try advertiser.update(port: 7002)
        try await watcher.waitForEvent(from: appeared + 1) {
            $0.event == "changed" && $0.peer?.uuid == own && $0.peer?.port == 7002 && $0.peer?.database == "archive"
        }
        #expect(!watcher.events[appeared...].contains { $0.event == "gone" }, "updated in place, never withdrawn")
        let registrations = registration.all.filter { if case .registering = $0 { true } else { false } }
        #expect(registrations.count == 1, "port and TXT changed without registering again: \(registration.all)")

        // A late subscriber first gets the peers already known; our own node is never among them.
        let late = Collector(browser.peerEvents(excluding: own))
        try await late.wait { if case .appeared(let peer) = $0 { peer.uuid == other } else { false } }
        #expect(browser.peers(excluding: own).map(\.uuid) == [other])
        #expect(!(seen.all + late.all).contains { $0.peer.uuid == own })

        advertiser.withdraw()
        try await watcher.waitForEvent(from: appeared + 1) { $0.event == "gone" && $0.peer?.uuid == own }
        advertiser.close()
        browser.close()
        #expect(browser.services.isEmpty)
        var afterClose = browser.events().makeAsyncIterator()
        #expect(await afterClose.next() == nil, "a closed browser's stream ends at once")
    }

    /// Releasing advertisers and browsers frees avahi's objects and threads: nothing piles up.
    @Test func closingReleasesThreadsAndDescriptors() async throws {
        try await TestBed.with(hosts: 1) { bed in
            try bed["a"].connectThisProcess()
            func counts() -> (threads: Int, descriptors: Int) {
                let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
                let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
                return (threads, descriptors)
            }
            let before = counts()
            for round in 0..<20 {
                let advertiser = try Advertiser(.syncd(uuid: newUUID(), database: "d", port: UInt16(8000 + round), tls: false))
                advertiser.publish()
                let browser = try Browser()
                #expect(browser.status == .available)
                _ = browser.events()
            }
            let after = counts()
            // A leak would add a poll thread and a bus socket per round (40 or more);
            // the slack is for tests running in parallel in this process.
            #expect(after.threads <= before.threads + 8, "threads \(before.threads) -> \(after.threads)")
            #expect(after.descriptors <= before.descriptors + 8, "descriptors \(before.descriptors) -> \(after.descriptors)")
        }
    }
}

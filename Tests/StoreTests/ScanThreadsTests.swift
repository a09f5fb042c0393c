import Dispatch
import Foundation
import Locking
import XCTest
@testable import Store

/// Long reads run on threads of their own, and a cancelled caller stops them.
final class ScanThreadsTests: DatabaseTestCase {
    func testScansHoldNoThreadOfTheCooperativePool() async throws {
        // More scans than the pool has threads (one per core), each blocked until released.
        let scans = min(ScanThreads.count, ProcessInfo.processInfo.activeProcessorCount + 1)
        let release = DispatchSemaphore(value: 0)
        let released = Locked(false)
        // Were the scans to hold the pool's threads, nothing else would run until this releases them.
        let watchdog = DispatchWorkItem {
            released.withLock { $0 = true }
            for _ in 0..<scans { release.signal() }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
        let started = Locked(0)
        let blocked = (0..<scans).map { _ in
            Task {
                try await ScanThreads.run { () throws(StoreError) in
                    started.withLock { $0 += 1 }
                    release.wait()
                }
            }
        }
        while started.withLock({ $0 }) < scans { try await Task.sleep(for: .milliseconds(1)) }
        let db = database!
        let answeredWhileScansRan = try await Task { () throws -> Bool in
            _ = try db.info()
            return !released.withLock { $0 }
        }.value
        if !released.withLock({ $0 }) {
            watchdog.cancel()
            for _ in 0..<scans { release.signal() }
        }
        for scan in blocked { try await scan.value }
        XCTAssertTrue(answeredWhileScansRan, "a task waited for \(scans) blocked scans")
    }

    func testCancellingTheCallerStopsTheScan() async throws {
        for batch in 0..<3 {
            let docs = (0..<1000).map { DocumentUpload(["_id": .string("d\(batch)-\($0)"), "n": .number(Double($0))]) }
            _ = try await database.bulkDocs(docs)
        }
        var options = ChangesOptions()
        options.selector = try Selector(["n": ["$lt": 0]])  // matches nothing: a pass over every document
        let db = database!
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let scan = Task {
            try await ScanThreads.run { [options] () throws(StoreError) -> ChangesPage in
                started.signal()
                release.wait()  // the caller is cancelled meanwhile
                return try db.changes(options)
            }
        }
        await Task.detached { started.wait() }.value
        scan.cancel()
        release.signal()
        do {
            let page = try await scan.value
            XCTFail("the scan went on to its end: \(page.changes.count) changes, last sequence \(page.lastSequence)")
        } catch let error as StoreError {
            XCTAssertEqual(error, .cancelled)
        }
        // A scan that is not cancelled reads to the end.
        let page = try await ScanThreads.run { [options] () throws(StoreError) in try db.changes(options) }
        XCTAssertEqual(page.changes.count, 0)
        XCTAssertEqual(page.lastSequence, 3000)
    }
}

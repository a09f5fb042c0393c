import Foundation
import JSON
import Store
import SyncAgent
import Testing

/// Checkpoints: where a replication resumes, and how their writes survive races.
@Suite struct CheckpointerTests {
    let id = ReplicationID(local: "db:l", remote: "db:r", direction: .push, filter: nil)

    @Test func startsAtZeroWithoutCheckpoints() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        let checkpointer = Checkpointer(replicationID: id, source: LocalEndpoint(pair.a), target: LocalEndpoint(pair.b))
        #expect(try await checkpointer.start() == .zero)
    }

    @Test func savesOnBothSidesAndTheNextSessionResumes() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        let first = Checkpointer(replicationID: id, source: LocalEndpoint(pair.a), target: LocalEndpoint(pair.b))
        _ = try await first.start()
        try await first.save(ChangeSequence(42 as UInt64), statistics: .init())
        let onSource = try pair.a.localDocument(id: "_local/" + id.value)
        let onTarget = try pair.b.localDocument(id: "_local/" + id.value)
        #expect(onSource.body["session_id"]?.stringValue == first.sessionID)
        #expect(onTarget.body["source_last_seq"] == 42)
        #expect(onTarget.body["history"]?.arrayValue?.first?["recorded_seq"] == 42)

        let second = Checkpointer(replicationID: id, source: LocalEndpoint(pair.a), target: LocalEndpoint(pair.b))
        #expect(try await second.start() == ChangeSequence(42 as UInt64))
        try await second.save(ChangeSequence(50 as UInt64), statistics: .init())
        let history = try pair.b.localDocument(id: "_local/" + id.value).body["history"]?.arrayValue ?? []
        #expect(history.compactMap { $0["recorded_seq"]?.intValue } == [50, 42])
    }

    @Test func comparesHistoriesWhenSessionsDiffer() {
        let source: JSON = ["session_id": "s3", "source_last_seq": 30, "history": [
            ["session_id": "s3", "recorded_seq": 30], ["session_id": "s2", "recorded_seq": 20], ["session_id": "s1", "recorded_seq": 10],
        ]]
        let target: JSON = ["session_id": "s2", "source_last_seq": 20, "history": [
            ["session_id": "s2", "recorded_seq": 20], ["session_id": "s1", "recorded_seq": 10],
        ]]
        #expect(Checkpointer.compare(source: source, target: target) == ChangeSequence(20 as UInt64))
        #expect(Checkpointer.compare(source: source, target: source) == ChangeSequence(30 as UInt64))
        #expect(Checkpointer.compare(source: source, target: nil) == .zero)
        let stranger: JSON = ["session_id": "x", "source_last_seq": 99, "history": [["session_id": "x", "recorded_seq": 99]]]
        #expect(Checkpointer.compare(source: source, target: stranger) == .zero)
    }

    @Test func aConflictingCheckpointWriteRereadsAndRetries() async throws {
        let pair = try LocalPair()
        defer { pair.close() }
        let checkpointer = Checkpointer(replicationID: id, source: LocalEndpoint(pair.a), target: LocalEndpoint(pair.b))
        _ = try await checkpointer.start()
        try await checkpointer.save(ChangeSequence(1 as UInt64), statistics: .init())
        // Another writer (a retried request, another replicator) updates the target's checkpoint meanwhile.
        let current = try pair.b.localDocument(id: "_local/" + id.value)
        try await pair.b.putLocal(id: "_local/" + id.value, ["_rev": .string(current.revision.description), "session_id": "intruder"])
        try await checkpointer.save(ChangeSequence(2 as UInt64), statistics: .init())
        let saved = try pair.b.localDocument(id: "_local/" + id.value)
        #expect(saved.body["source_last_seq"] == 2)
        #expect(saved.revision.digest == "3")
    }

    @Test func remoteCheckpointConflictRetriesOverHTTP() async throws {
        try await withTwoListeners { a, _ in
            _ = try a.catalog.create("cp")
            let remote = try RemoteEndpoint(url: a.url + "/cp")
            let pair = try LocalPair()
            defer { pair.close() }
            let checkpointer = Checkpointer(replicationID: id, source: LocalEndpoint(pair.a), target: remote)
            _ = try await checkpointer.start()
            try await checkpointer.save(ChangeSequence(7 as UInt64), statistics: .init())
            let url = a.url + "/cp/_local/" + id.value
            let current = try await HTTP.json(.GET, url).json
            #expect(current["source_last_seq"] == 7)
            let overwrite = try await HTTP.json(.PUT, url, ["_rev": current["_rev"]!, "session_id": "other"])
            #expect(overwrite.status == 201)
            try await checkpointer.save(ChangeSequence(9 as UInt64), statistics: .init())
            #expect(try await HTTP.json(.GET, url).json["source_last_seq"] == 9)
            await remote.shutdown()
        }
    }
}

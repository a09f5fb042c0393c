import Glibc
import JSON
import QueryServer
import Store
import TestBed
import XCTest

/// The query server processes, driven as the store and the listener drive them: real
/// `syncd query-server` processes over pipes, with CouchDB's query server commands.
final class QueryServersTests: XCTestCase {
    private func servers(timeout: Duration = .seconds(5), processes: Int = 2) throws -> QueryServers {
        QueryServers(executable: try TestBed.syncdExecutable, maximumProcesses: processes, timeout: timeout)
    }

    private func command(_ json: JSON) -> [UInt8] { json.serializedBytes() }

    private static let design: JSON = [
        "_id": "_design/rules",
        "_rev": "1-a",
        "validate_doc_update": """
            function (newDoc, oldDoc, userCtx, secObj) {
              var rules = require('lib/rules');
              if (!newDoc.type) throw({forbidden: 'Documents need a type.'});
              if (newDoc.type === 'secret' && userCtx.roles.indexOf('spy') < 0) throw({unauthorized: 'Only spies write secrets.'});
              if (oldDoc && oldDoc.locked) throw({forbidden: 'locked by ' + rules.owner});
              if (newDoc.type === 'odd') throw({teapot: 'short and stout'});
              if (newDoc.type === 'broken') return newDoc.missing.field;
            }
            """,
        "lib": ["rules": "exports.owner = 'ops';"],
    ]

    private func validate(_ servers: QueryServers, _ updates: [(JSON, JSON?)], roles: [String] = []) async -> [StoreError?] {
        let design = DesignDocument(id: "_design/rules", revision: "1-a", document: Self.design)
        let context = ValidationContext(userContext: ["db": "db", "name": "ann", "roles": .array(roles.map(JSON.string))], security: [:])
        return await JavaScriptDesignFunctions(servers: servers).validate(
            updates.map { ProposedUpdate(newDocument: $0.0, oldDocument: $0.1) }, by: [design], context: context)
    }

    func testValidationAnswersAsCouchDB() async throws {
        let servers = try servers()
        defer { servers.shutdown() }
        let verdicts = await validate(servers, [
            (["_id": "a", "type": "note"], nil),
            (["_id": "b"], nil),
            (["_id": "c", "type": "secret"], nil),
            (["_id": "d", "type": "note"], ["_id": "d", "_rev": "1-x", "locked": true]),
            (["_id": "e", "type": "odd"], nil),
            (["_id": "f", "type": "broken"], nil),
        ])
        XCTAssertNil(verdicts[0])
        XCTAssertEqual(verdicts[1], StoreError(.forbidden, error: "forbidden", reason: "Documents need a type."))
        XCTAssertEqual(verdicts[2], StoreError(.unauthorized, error: "unauthorized", reason: "Only spies write secrets."))
        XCTAssertEqual(verdicts[3], StoreError(.forbidden, error: "forbidden", reason: "locked by ops"), "require() reads the design document's modules")
        XCTAssertEqual(verdicts[4]?.kind, .internal)
        XCTAssertEqual(verdicts[4]?.reason, "short and stout")
        XCTAssertEqual(verdicts[5]?.error, "TypeError", "a runtime error is the function's failure, not a refusal")
        let spy = await validate(servers, [(["_id": "c", "type": "secret"], nil)], roles: ["spy"])
        XCTAssertEqual(spy.count, 1)
        XCTAssertNil(spy[0])
    }

    /// One process runs every database's functions, some written on other nodes: a function that
    /// tries to change the built-ins, the globals or its design document changes nothing for
    /// the next function (here another design document's validation, in the same process).
    func testAFunctionCannotChangeWhatAnotherRunsWith() async throws {
        let servers = try servers(processes: 1)
        defer { servers.shutdown() }
        let tamper: JSON = [
            "_id": "_design/tamper", "_rev": "1-t",
            "validate_doc_update": """
                function (newDoc) {
                  JSON.stringify = function () { return '1'; };
                  JSON.parse = function () { return ['reset']; };
                  Array.prototype.push = function () {};
                  Object.prototype.forbidden = 'planted';
                  String.prototype.indexOf = function () { return 0; };
                  emit = null; log = null; isArray = null;
                  this.validate_doc_update = 'function () {}';
                  planted = true;
                }
                """,
        ]
        let tamperer = DesignDocument(id: "_design/tamper", revision: "1-t", document: tamper)
        let context = ValidationContext(userContext: ["db": "other", "name": nil, "roles": []], security: [:])
        let functions = JavaScriptDesignFunctions(servers: servers)
        _ = await functions.validate([ProposedUpdate(newDocument: ["_id": "x"], oldDocument: nil)], by: [tamperer], context: context)
        _ = await functions.validate([ProposedUpdate(newDocument: ["_id": "y"], oldDocument: nil)], by: [tamperer], context: context)
        let verdicts = await validate(servers, [(["_id": "b"], nil), (["_id": "c", "type": "secret"], nil), (["_id": "a", "type": "note"], nil)])
        XCTAssertEqual(verdicts[0], StoreError(.forbidden, error: "forbidden", reason: "Documents need a type."))
        XCTAssertEqual(verdicts[1]?.kind, .unauthorized, "indexOf is still String's own")
        XCTAssertNil(verdicts[2])
        let probe = await servers.run([command(["map_doc", ["_id": "z"]])],
                                      setup: [command(["reset"]), command(["add_fun", "function (doc) { emit(typeof planted, isArray([])); }"])])
        XCTAssertEqual(probe.last, .answer([[["undefined", true]]]))
    }

    func testMapAndReduceAnswerCouchDBsShapes() async throws {
        let servers = try servers()
        defer { servers.shutdown() }
        let outcomes = await servers.run([], setup: [
            command(["reset"]),
            command(["add_fun", "function (doc) { emit(doc.n, 1); if (doc.tags) doc.tags.forEach(function (t) { emit([t, doc.n], null); }); }"]),
            command(["add_fun", "function (doc) { log('mapping ' + doc._id); emit(null, sum([doc.n, 1])); }"]),
            command(["map_doc", ["_id": "x", "n": 2, "tags": ["red", "blue"]]]),
            command(["map_doc", ["_id": "y"]]),
            command(["reduce", ["function (keys, values, rereduce) { return sum(values); }"], [[["a", "x"], 1], [["b", "y"], 2]]]),
            command(["rereduce", ["function (keys, values, rereduce) { return rereduce ? values.length : 0; }"], [3, 4, 5]]),
            command(["add_fun", "not a function"]),
        ])
        XCTAssertEqual(outcomes.count, 8)
        XCTAssertEqual(outcomes[3], .answer([[[2, 1], [["red", 2], nil], [["blue", 2], nil]], [[nil, 3]]]))
        // A doc without `n` emits undefined → null, and sum of [undefined, 1] is NaN → null in JSON.
        XCTAssertEqual(outcomes[4], .answer([[[nil, 1]], [[nil, nil]]]))
        XCTAssertEqual(outcomes[5], .answer([true, [3]]))
        XCTAssertEqual(outcomes[6], .answer([true, [3]]))
        guard case .answer(.array(let error)) = outcomes[7] else { return XCTFail("\(outcomes[7])") }
        XCTAssertEqual(error.first, "error")
        XCTAssertEqual(error.dropFirst().first, "compilation_error")
    }

    func testFunctionsSeeNoHostBeyondTheLanguage() async throws {
        let servers = try servers()
        defer { servers.shutdown() }
        let probe = """
            function (doc) {
              emit('Duktape', typeof Duktape);
              emit('require', typeof require);
              emit('print', typeof print);
              emit('this', typeof this.process);
              try { doc.changed = 1; } catch (e) { }
              emit('frozen', doc.changed === undefined);
            }
            """
        let outcomes = await servers.run([command(["map_doc", ["_id": "x"]])], setup: [command(["reset"]), command(["add_fun", .string(probe)])])
        XCTAssertEqual(outcomes[2], .answer([[["Duktape", "undefined"], ["require", "function"], ["print", "undefined"],
                                              ["this", "undefined"], ["frozen", true]]]))
    }

    func testARunawayFunctionIsStoppedWithinItsBoundAndOthersAreAnsweredMeanwhile() async throws {
        let servers = try servers(timeout: .seconds(1), processes: 2)
        defer { servers.shutdown() }
        let start = ContinuousClock.now
        let spinning = [
            command(["reset"]),
            command(["add_fun", "function (doc) { while (true) {} }"]),
            command(["map_doc", ["_id": "x"]]),
            command(["add_fun", "function (doc) { emit(doc._id, 1); }"]),
        ]
        async let runaway = servers.run(spinning)
        // The other process answers while the first spins.
        try await Task.sleep(for: .milliseconds(200))
        let other = await servers.run([command(["reset"]), command(["add_fun", "function (doc) { emit(1, 2); }"]), command(["map_doc", ["_id": "y"]])])
        XCTAssertEqual(other.last, .answer([[[1, 2]]]))
        XCTAssertLessThan(ContinuousClock.now - start, .milliseconds(900), "the second caller did not wait for the runaway")
        let outcomes = await runaway
        XCTAssertEqual(outcomes[2], .failed(.init(error: "os_process_error", reason: "OS process timed out.")))
        XCTAssertEqual(outcomes[3], .answer(true), "the commands after the runaway ran in a new process")
    }

    func testMemoryAndRecursionBoundsGiveTheFunctionAnErrorNotTheAgentACrash() async throws {
        let servers = try servers()
        defer { servers.shutdown() }
        let outcomes = await servers.run([
            command(["reset"]),
            command(["add_fun", "function (doc) { var s = 'x'; while (true) { s = s + s; } }"]),
            command(["add_fun", "function (doc) { function down(n) { return n === 0 ? 0 : 1 + down(n - 1); } emit(down(100000), 1); }"]),
            command(["add_fun", "function (doc) { emit('ok', doc._id); }"]),
            command(["map_doc", ["_id": "x"]]),
        ])
        // Both failing functions are logged and emit nothing, as CouchDB treats a map function's error; the third still runs.
        XCTAssertEqual(outcomes[4], .answer([[], [], [["ok", "x"]]]))
    }

    func testAProcessKilledMidCommandIsReplacedAndTheCommandAnswered() async throws {
        let servers = try servers(timeout: .seconds(5), processes: 1)
        defer { servers.shutdown() }
        // One process: learn its pid from /proc while it works on a slow command, then kill it.
        let slow = "function (doc) { var until = Date.now() + 1500; while (Date.now() < until) {} emit(doc._id, 1); }"
        let map = [command(["map_doc", ["_id": "x"]])], setup = [command(["reset"]), command(["add_fun", .string(slow)])]
        async let outcomes = servers.run(map, setup: setup)
        var killed = false
        for _ in 0..<40 where !killed {
            try await Task.sleep(for: .milliseconds(50))
            for pid in Self.children(named: "syncd") {
                kill(pid, SIGKILL)
                killed = true
            }
        }
        XCTAssertTrue(killed, "no query server process was found to kill")
        let answered = await outcomes
        XCTAssertEqual(answered.last, .answer([[["x", 1]]]), "the killed process's command was run again in a new process")
    }

    /// A query server gone at once (here a program that reads nothing and exits) fails each
    /// command with CouchDB's `os_process_error`; the caller, writing into its closed pipe, lives on.
    func testAServerThatIsGoneFailsItsCommandsAndTheCallerLivesOn() async throws {
        let servers = QueryServers(executable: "/bin/true", arguments: [], maximumProcesses: 1)
        defer { servers.shutdown() }
        let big = command(["map_doc", ["_id": "x", "padding": .string(String(repeating: "p", count: 100_000))]])
        let outcomes = await servers.run(Array(repeating: big, count: 3))
        XCTAssertEqual(outcomes.count, 3)
        for outcome in outcomes {
            guard case .failed(let failure) = outcome else { return XCTFail("\(outcome)") }
            XCTAssertEqual(failure.error, "os_process_error")
        }
        let missing = await QueryServers(executable: "/nonexistent/syncd").run([command(["reset"])])
        guard case .failed(let failure)? = missing.first else { return XCTFail("\(missing)") }
        XCTAssertTrue(failure.reason.contains("cannot start a query server"), failure.reason)
    }

    /// This process's children whose command is `name`.
    private static func children(named name: String) -> [pid_t] {
        let me = getpid()
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8) else { return nil }
            guard let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { return nil }
            let command = stat[stat.index(after: open)..<close]
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            guard command == name, fields.count > 1, pid_t(fields[1]) == me else { return nil }
            return pid
        }
    }
}

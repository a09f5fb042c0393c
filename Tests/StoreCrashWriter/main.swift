// Writes documents to a store as fast as it can and prints the id of each
// write once it is acknowledged, for the crash test to kill mid-stream.
import Foundation
import JSON
import Store

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write("usage: store-crash-writer DATABASE-PATH RUN\n".data(using: .utf8)!)
    exit(2)
}
/// Reports an acknowledged write with one unbuffered write(2), so a kill never splits a line.
func acknowledge(_ id: String, _ revision: String) {
    let line = Array("doc \(id) \(revision)\n".utf8)
    line.withUnsafeBytes { _ = write(1, $0.baseAddress, $0.count) }
}

let database = try Database.open(path: arguments[1])
let run = arguments[2]

// Eight writers at once, so commits are grouped, each mixing creates,
// updates (growing revision trees) and bulk writes.
await withTaskGroup(of: Void.self) { group in
    for writer in 0..<8 {
        group.addTask {
            var revision: String?
            var index = 0
            while true {
                index += 1
                let id = "\(run)-\(writer)-\(index)"
                do {
                    if index % 3 == 0 {
                        let docs: [DocumentUpload] = (0..<20).map { DocumentUpload(["_id": .string("\(id)-b\($0)"), "n": .number(Double($0))]) }
                        let results = try await database.bulkDocs(docs)
                        for result in results { acknowledge(result.id, try result.result.get().description) }
                    } else {
                        var body: JSON.Object = ["_id": .string("\(run)-\(writer)-hot"), "n": .number(Double(index))]
                        if let revision { body["_rev"] = .string(revision) }
                        let written = try await database.put(.object(body))
                        revision = try written.result.get().description
                        acknowledge(written.id, revision!)
                        let fresh = try await database.put(["_id": .string(id), "payload": .string(String(repeating: "x", count: 200))])
                        acknowledge(fresh.id, try fresh.result.get().description)
                    }
                } catch {
                    FileHandle.standardError.write("write failed: \(error)\n".data(using: .utf8)!)
                    exit(1)
                }
            }
        }
    }
}

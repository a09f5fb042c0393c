import JSON

extension Database {
    /// The changes whose revisions pass a design document's filter function, as CouchDB
    /// filters `_changes?filter=DESIGN/NAME` (and `filter=_view`): the function sees each
    /// change's winning revision, or with ``ChangesOptions/allLeaves`` each of its leaves (a
    /// row keeps the leaves that pass), tombstones included. `request` is CouchDB's `req`.
    /// Throws 404 when the design document or its function is missing, and the function's
    /// failure; needs ``Options/designFunctions``.
    public func filter(_ changes: [Change], by filter: DesignFilter, of designID: String, request: JSON, allLeaves: Bool) async throws(StoreError) -> [Change] {
        guard let functions = options.designFunctions else {
            throw StoreError(.internal, error: "os_process_error", reason: "this store runs no design document functions")
        }
        let stored: DocumentRevision
        do {
            stored = try document(id: designID)
        } catch where error.kind == .notFound {
            throw .notFound("missing")
        }
        let design = stored.json()
        guard filter.source(in: design)?.stringValue != nil else { throw .notFound("missing json key: \(filter.name)") }
        guard !changes.isEmpty else { return [] }
        // Each change's revisions as the function sees them, in one batch for the whole page.
        let revisions: [[DocumentRevision]] = try read { db in
            try changes.map { change in
                guard let row = try DocumentRow.load(id: change.id, from: db) else { return [] }
                let nodes = allLeaves ? row.tree.leaves : row.tree.winner.map { [$0] } ?? []
                return try nodes.compactMap { try row.revision(at: $0, in: db) }
            }
        }
        let documents = revisions.flatMap { $0.map { $0.json(.revisions) } }
        let passes = try await functions.filter(documents, by: filter, of: DesignDocument(id: designID, revision: stored.revision.description, document: design), request: request)
        guard passes.count == documents.count else { throw .internal("the filter answered \(passes.count) verdicts for \(documents.count) documents") }
        var verdicts = passes.makeIterator()
        return zip(changes, revisions).compactMap { change, revisions in
            let passed = revisions.filter { _ in verdicts.next() == true }.map(\.revision)
            guard !passed.isEmpty else { return nil }
            return Change(sequence: change.sequence, id: change.id, deleted: change.deleted,
                          revisions: change.revisions.filter(passed.contains), document: change.document)
        }
    }
}

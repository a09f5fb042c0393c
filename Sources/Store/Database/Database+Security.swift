import JSON

extension Database {
    /// The database's security object (CouchDB's `_security`: who administers
    /// and who may read and write it), `nil` when none was ever set. The store
    /// keeps it and enforces nothing: the listener decides what it means.
    public func security() throws(StoreError) -> JSON? {
        try read { db in
            let select = try db.statement("SELECT value FROM meta WHERE key = 'security'")
            guard try select.step() else { return nil }
            return try? JSON(parsing: select.blob(0))
        }
    }

    /// Replaces the security object; it must be a JSON object.
    public func setSecurity(_ security: JSON) async throws(StoreError) {
        guard case .object = security else { throw .badRequest("the security object must be a JSON object") }
        let bytes = security.serializedBytes()
        try await write { context in
            let update = try context.connection.statement("INSERT OR REPLACE INTO meta(key, value) VALUES ('security', ?)")
            update.bind(bytes, at: 1)
            try update.run()
        }
    }
}

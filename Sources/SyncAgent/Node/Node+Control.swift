import FoundationEssentials
import Store

/// The node answering the commands itself: a command that claimed the data
/// directory, and the agent's control API (``NodeRoutes``), both come here.
extension Node: NodeControl {
    public func users() async throws -> [UserEntry] {
        try users.names().map { UserEntry(name: $0, roles: users.user($0)?.roles ?? []) }
    }

    public func setUser(_ name: String, password: String, roles: [String]?) async throws -> UserEntry {
        guard UserStore.isValidName(name) else {
            throw NodeControlError.invalid("invalid user name: it must be non-empty, without ':' or control characters")
        }
        guard !password.isEmpty else { throw NodeControlError.invalid("the password is empty") }
        try users.setPassword(password, for: name, roles: roles)
        return UserEntry(name: name, roles: users.user(name)?.roles ?? [])
    }

    public func removeUser(_ name: String) async throws -> Bool {
        try users.remove(name)
    }

    public func peers() async throws -> [PairedPeer] {
        try peers.all()
    }

    public func removePeer(_ text: String) async throws -> PairedPeer {
        let found = try peers.find(text)
        guard let target = found.first else { throw NodeControlError.noSuchPeer(text) }
        guard found.count == 1 else { throw NodeControlError.ambiguousPeer(text, found.count) }
        try peers.remove(id: target.id)
        return target
    }

    public func join(_ url: String, port: Int?, introduce: Bool) async throws -> PairedPeer {
        do {
            let invitation = try InvitationURL(url)
            let client = PairingClient(identity: identity, name: name,
                                       port: port ?? ListenerRecord.current(in: directory)?.port, peers: peers,
                                       introduce: introduce)
            return try await client.join(invitation)
        } catch {
            throw NodeControlError.pairing("\(error)")
        }
    }

    public func invite(databases: [String], lifetime: Duration, introduce: Bool) async throws -> InvitationTicket {
        guard !databases.isEmpty else { throw NodeControlError.invalid("an invitation shares at least one database") }
        for database in databases where !Catalog.isValidName(database) {
            throw NodeControlError.invalid("invalid database name \(database)")
        }
        guard let listener = ListenerRecord.current(in: directory), listener.tls else {
            throw NodeControlError.invalid("the syncd serving \(directory) does not serve HTTPS; pairing needs it (serve --tls)")
        }
        for database in databases { _ = try catalog.openOrCreate(database) }
        let (invitation, secret) = try invitations.create(databases: databases, lifetime: lifetime, introduce: introduce)
        return InvitationTicket(handle: invitation.handle, secret: secret, databases: databases, expires: invitation.expires,
                                name: name, id: identity.id, uuid: identity.uuid, port: listener.port, host: listener.invitationHost)
    }

    public func waitForInvitation(_ handle: String, atMost limit: Duration?) async throws -> InvitationWatch.Outcome {
        await InvitationWatch.wait(for: handle, in: invitations, peers: peers, atMost: limit)
    }

    public func cancelInvitations(handle: String?) async throws -> Int {
        try invitations.cancel(handle: handle)
    }

    public func openDatabase(_ name: String) async throws -> DatabaseSummary {
        guard Catalog.isValidName(name) else { throw NodeControlError.invalid("'\(name)' is not a valid database name") }
        let info = try catalog.openOrCreate(name).info()
        return DatabaseSummary(uuid: info.uuid, documents: info.docCount, deleted: info.deletedDocCount,
                               updateSequence: String(info.updateSequence), size: info.fileSize)
    }
}

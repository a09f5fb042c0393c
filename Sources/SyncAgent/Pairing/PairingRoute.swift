import FoundationEssentials
import Hummingbird
import JSON
import Logging
import Store

/// `POST /_pair`: a node joins with an invitation's secret, over TLS with its
/// own certificate as client certificate. The certificate names the joining
/// node's UUID and its fingerprint is the ID this node will trust it by.
///
/// Body: `{"secret": "…", "name": "laptop", "port": 5984, "introduce": true}` (all but the secret optional).
/// Answer: `{"ok": true, "uuid": "…", "id": "…", "name": "…", "databases": ["notes"], "introduce": true}`;
/// `introduce` is false when either side asked for a private pair (`--no-introduce`); `known_as`
/// is there when another peer had the joiner's name, with the name it is recorded by instead.
extension CouchResponder {
    func pair(_ exchange: inout Exchange) async throws -> Response {
        let address = exchange.context.clientAddress
        if let wait = listener.pairingAttempts.wait(for: address) {
            throw CouchError.tooManyFailures("pairing attempts", wait: wait)
        }
        guard let client = await listener.connections.client(of: exchange.context.channel) else {
            throw CouchError.badRequest("Pairing needs HTTPS with the joining node's certificate as client certificate.")
        }
        guard let uuid = client.uuid else {
            throw CouchError.badRequest("The client certificate is not a syncd node's: it names no node UUID.")
        }
        guard uuid != listener.node.identity.uuid, client.id != listener.node.identity.id else {
            throw CouchError(.forbidden, "forbidden", "Pairing refused: the certificate claims this node's own UUID or ID.")
        }
        if let taken = listener.node.peers.conflict(uuid: uuid, id: client.id) {
            listener.pairingAttempts.failed(address)
            listener.logger.warning("pairing refused from \(address): node UUID \(uuid) is paired with \(taken.id.short), not \(client.id.short)")
            throw CouchError(.forbidden, "forbidden", "Pairing refused: node UUID \(uuid) is already paired with another ID.")
        }
        let body = try await exchange.readObject(limit: Exchange.smallBodyLimit)
        guard let secret = body["secret"]?.stringValue, !secret.isEmpty, secret.utf8.count <= 128 else {
            throw CouchError.badRequest("The invitation secret is missing.")
        }
        let name = Self.peerName(body["name"]?.stringValue) ?? "node " + client.id.short
        let port = body["port"]?.intValue.flatMap { (1...65535).contains($0) ? $0 : nil }

        let invitation: Invitation
        do {
            invitation = try listener.node.invitations.redeem(secret: secret, by: uuid)
        } catch {
            listener.pairingAttempts.failed(address)
            listener.logger.warning("pairing refused from \(address), node \(client.id.short): \(error)")
            if case .invitationRefused(let why) = error { throw CouchError(.forbidden, "forbidden", "Pairing refused: \(why).") }
            throw CouchError(.internalServerError, "unknown_error", error.description)
        }
        let introduce = invitation.introduce && body["introduce"]?.boolValue != false
        let peer = PairedPeer(uuid: uuid, id: client.id, name: name,
                              addresses: port.map { [HostPort.join(address, $0)] } ?? [], databases: invitation.databases,
                              introduce: introduce)
        let recorded: PairedPeer
        do {
            for database in invitation.databases { _ = try catalog.openOrCreate(database) }
            recorded = try listener.node.peers.add(peer)
        } catch {
            // Nothing was paired: the invitation stays usable.
            do {
                try listener.node.invitations.reopen(handle: invitation.handle, spentBy: uuid)
            } catch let reopening {
                listener.logger.error("invitation \(invitation.handle) stays spent after a failed pairing: \(reopening)")
            }
            if let error = error as? PairingError {
                throw CouchError(.forbidden, "forbidden", error.description.prefix(1).uppercased() + error.description.dropFirst() + ".")
            }
            throw error
        }
        let taken = recorded.calledItself.map { " (another peer is named \($0))" } ?? ""
        listener.logger.notice("paired with \(recorded.name)\(taken) (\(client.id)) from \(address), sharing \(invitation.databases.joined(separator: ", "))")
        var answer: JSON.Object = [
            "ok": true,
            "uuid": .string(listener.node.identity.uuid),
            "id": .string(listener.node.identity.id.description),
            "name": .string(listener.node.name),
            "databases": .array(invitation.databases.map { .string($0) }),
            "introduce": .bool(introduce),
        ]
        if recorded.calledItself != nil { answer["known_as"] = .string(recorded.name) }
        return Self.json(.object(answer))
    }

    /// A name a peer gave itself, cut to 64 characters without control characters; `nil` if empty.
    static func peerName(_ text: String?) -> String? {
        guard let text else { return nil }
        // No control or format characters (C0, C1, bidirectional overrides): names reach terminals.
        let clean = String(text.unicodeScalars.filter {
            $0.properties.generalCategory != .control && $0.properties.generalCategory != .format
        }.prefix(64).map(Character.init))
            .trimmingWhitespace()
        return clean.isEmpty ? nil : clean
    }
}

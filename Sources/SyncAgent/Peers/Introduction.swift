import Crypto
import FoundationEssentials
import JSON
import Store

/// One node a member introduces: a node the member paired with directly, and the
/// databases the member shares with both it and the node it tells. What
/// `GET /_introductions` answers a member, and what this node keeps of each
/// member's answer (``PeerStore/record(_:from:)``).
public struct Introduction: Sendable, Hashable, Codable {
    /// The node's UUID, as its certificate names it.
    public var uuid: String
    /// The ID its certificate must have.
    public var id: NodeID
    /// The name it gave itself.
    public var name: String
    /// Where the member reached it, newest first.
    public var addresses: [String]
    /// The databases the member shares with it and with the node told.
    public var databases: [String]
    /// When the member paired with it.
    public var pairedAt: Date

    enum CodingKeys: String, CodingKey {
        case uuid, id, name, addresses, databases
        case pairedAt = "paired_at"
    }

    /// The most introductions one answer may carry.
    static let largestList = 256

    /// The introduction `json` carries; `nil` unless every field is valid (a member's answer is input like any other).
    init?(json: JSON) {
        // A node UUID as certificates name it: 32 lower-case hex digits.
        guard let uuid = json["uuid"]?.stringValue, uuid.utf8.count == 32, Hex.bytes(uuid) != nil, uuid == uuid.lowercased(),
              let id = json["id"]?.stringValue.flatMap(NodeID.init),
              let name = CouchResponder.peerName(json["name"]?.stringValue),
              let addresses = json["addresses"]?.arrayValue, addresses.count <= 8,
              let databases = json["databases"]?.arrayValue, databases.count <= 256,
              let seconds = json["paired_at"]?.doubleValue, seconds.isFinite, seconds >= 0
        else { return nil }
        self.uuid = uuid
        self.id = id
        self.name = name
        self.addresses = addresses.compactMap(\.stringValue).filter { $0.utf8.count <= 300 && HostPort.split($0) != nil }
        self.databases = databases.compactMap(\.stringValue).filter(Catalog.isValidName)
        pairedAt = Date(timeIntervalSince1970: seconds.rounded(.down))
        guard self.databases.count == databases.count else { return nil }
    }

    /// An introduction of `peer` sharing `databases`.
    init(_ peer: PairedPeer, databases: [String]) {
        uuid = peer.uuid
        id = peer.id
        name = peer.name
        addresses = peer.addresses
        self.databases = databases
        pairedAt = peer.pairedAt
    }

    /// As `GET /_introductions` sends it.
    var json: JSON {
        [
            "uuid": .string(uuid), "id": .string(id.description), "name": .string(name),
            "addresses": .array(addresses.map { .string($0) }), "databases": .array(databases.map { .string($0) }),
            "paired_at": .number(pairedAt.timeIntervalSince1970.rounded(.down)),
        ]
    }

    /// The answer `GET /_introductions` sends: the list and its tag, which names the list
    /// (a follower sends it back as `since` and is answered when the list is another).
    static func answer(_ introductions: [Introduction]) -> (tag: String, json: JSON) {
        let list = JSON.array(introductions.sorted { $0.id.fingerprint < $1.id.fingerprint }.map(\.json))
        let digest = SHA256.hash(data: list.serializedBytes(sortedKeys: true))
        let tag = Hex.string(digest.prefix(16))
        return (tag, ["tag": .string(tag), "introductions": list])
    }

    /// The list and tag of an answer; `nil` if it is not one.
    static func parse(answer json: JSON) -> (tag: String, introductions: [Introduction])? {
        guard let tag = json["tag"]?.stringValue, tag.utf8.count <= 64,
              let list = json["introductions"]?.arrayValue, list.count <= largestList else { return nil }
        let introductions = list.compactMap(Introduction.init(json:))
        guard introductions.count == list.count else { return nil }
        return (tag, introductions)
    }
}

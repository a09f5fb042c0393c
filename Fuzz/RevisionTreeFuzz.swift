/// libFuzzer entry: any bytes given to the revision-tree decoder (a corrupt or
/// hostile database row) either decode or throw, never crash; a tree that
/// decodes answers its queries and encodes to bytes that decode to it again.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRevisionTreeDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let tree = try? RevisionTree(decoding: UnsafeBufferPointer(start: data, count: size)) else { return 0 }
    _ = tree.winner
    _ = tree.leaves
    for node in tree.nodes.prefix(16) { _ = tree.history(of: node.revision) }
    guard let again = try? RevisionTree(decoding: tree.encoded()), again == tree else {
        fatalError("a decoded tree does not survive encoding")
    }
    return 0
}

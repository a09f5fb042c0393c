/// Cuts `bytes` into the chunks a seed byte picks, so that a fuzz input is always read the
/// same way: the seed's low 3 bits choose the largest chunk (1 to 4,096 bytes) and the seed
/// drives a xorshift generator drawing each chunk's size up to it, empty chunks included.
func chunks(of bytes: ArraySlice<UInt8>, seed: UInt8) -> [ArraySlice<UInt8>] {
    let largest = [1, 2, 3, 5, 8, 64, 512, 4096][Int(seed & 7)]
    var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 | 1
    var chunks: [ArraySlice<UInt8>] = []
    var start = bytes.startIndex
    while start < bytes.endIndex {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        let end = min(start + Int(state % UInt64(largest + 1)), bytes.endIndex)
        chunks.append(bytes[start..<end])
        start = end
    }
    return chunks
}

/// What a `Range` header asks of a representation of `length` bytes, read as Apache
/// CouchDB reads it for an attachment GET (`chttpd_db:parse_ranges` over mochiweb's
/// parser), within RFC 9110 §14.
enum ByteRanges: Equatable, Sendable {
    /// No range, or one to ignore: the whole attachment, 200. That is a missing or
    /// invalid header (RFC 9110: a server ignores a `Range` it cannot parse), a unit
    /// other than `bytes`, a list that includes `0-`, or more ranges than
    /// ``maximumCount`` (CouchDB answers those with the whole too).
    case whole
    /// The ranges to send, in the order asked, each first...last inclusive and
    /// inside the attachment: 206, one part, or `multipart/byteranges` for several.
    case parts([ClosedRange<Int>])
    /// A range that starts at or past the end, ends before it starts, or a suffix
    /// of 0 bytes: 416 with `Content-Range: bytes */LENGTH`.
    case unsatisfiable

    /// At most this many ranges are sent; more and the whole attachment is (CouchDB's bound).
    static let maximumCount = 9

    /// Reads `header` (the `Range` field's value, if any) against `length` bytes.
    init(header: String?, length: Int) {
        guard let header, let equals = header.firstIndex(of: "="),
              header[..<equals].trimmingWhitespace().lowercased() == "bytes" else {
            self = .whole
            return
        }
        // Each spec is `first-last`, `first-` or `-suffix`; one that is none of these voids the header.
        var specs: [(first: Int?, last: Int?)] = []
        for piece in header[header.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false) {
            let spec = piece.trimmingWhitespace()
            guard let dash = spec.firstIndex(of: "-") else { self = .whole; return }
            let (before, after) = (spec[..<dash], spec[spec.index(after: dash)...])
            guard before.allSatisfy(\.isASCIIDigitCharacter), after.allSatisfy(\.isASCIIDigitCharacter),
                  !(before.isEmpty && after.isEmpty) else { self = .whole; return }
            // Digits beyond Int's range still name a position past any attachment.
            let first = before.isEmpty ? nil : Int(before) ?? Int.max
            let last = after.isEmpty ? nil : Int(after) ?? Int.max
            specs.append((first, last))
        }
        if specs.isEmpty || specs.count > Self.maximumCount || specs.contains(where: { $0.first == 0 && $0.last == nil }) {
            self = .whole
            return
        }
        var ranges: [ClosedRange<Int>] = []
        for spec in specs {
            let first: Int
            let last: Int
            switch (spec.first, spec.last) {
            case (let from?, let to?):
                guard from <= to else { self = .unsatisfiable; return }
                (first, last) = (from, min(to, length - 1))
            case (let from?, nil):
                (first, last) = (from, length - 1)
            case (nil, let suffix?):
                // A suffix longer than the attachment is all of it (RFC 9110 §14.1.3).
                (first, last) = (max(0, length - suffix), length - 1)
            case (nil, nil):
                self = .whole
                return
            }
            guard first <= last else { self = .unsatisfiable; return }
            ranges.append(first...last)
        }
        self = .parts(ranges)
    }
}

private extension Character {
    /// `0`-`9` only (not other scripts' digits, which `isNumber` takes).
    var isASCIIDigitCharacter: Bool { isASCII && isWholeNumber }
}

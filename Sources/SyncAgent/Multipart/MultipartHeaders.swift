import FoundationEssentials

/// The headers of one MIME part, with the parameters CouchDB's formats use.
struct MultipartHeaders: Sendable {
    /// The headers in order, names lower-cased.
    let fields: [(name: String, value: String)]

    /// Headers from their bytes (`Name: value` lines separated by CRLF), read byte by
    /// byte: a multipart answer has a part per document, so this runs once per document.
    init(parsing bytes: ArraySlice<UInt8>) {
        var fields: [(name: String, value: String)] = []
        var lineStart = bytes.startIndex
        while lineStart < bytes.endIndex {
            var lineEnd = lineStart
            while lineEnd < bytes.endIndex && bytes[lineEnd] != 0x0D && bytes[lineEnd] != 0x0A { lineEnd += 1 }
            if let colon = bytes[lineStart..<lineEnd].firstIndex(of: UInt8(ascii: ":")) {
                let name = Self.trimmed(bytes[lineStart..<colon]).map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
                fields.append((String(decoding: name, as: UTF8.self),
                               String(decoding: Self.trimmed(bytes[(colon + 1)..<lineEnd]), as: UTF8.self)))
            }
            lineStart = lineEnd
            while lineStart < bytes.endIndex && (bytes[lineStart] == 0x0D || bytes[lineStart] == 0x0A) { lineStart += 1 }
        }
        self.fields = fields
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == 0x20 || first == 0x09 { slice.removeFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice.removeLast() }
        return slice
    }

    /// Headers from name-value pairs.
    init(_ fields: [(name: String, value: String)]) {
        self.fields = fields.map { ($0.name.lowercased(), $0.value) }
    }

    /// The value of header `name`.
    subscript(name: String) -> String? {
        let lowered = name.lowercased()
        return fields.first { $0.name == lowered }?.value
    }

    /// The media type of `Content-Type`, lower-cased, without parameters.
    var contentType: String? { self["content-type"].map { MediaType(parsing: $0).type } }

    /// The `filename` parameter of `Content-Disposition`.
    var filename: String? { self["content-disposition"].flatMap { MediaType(parsing: $0).parameters["filename"] } }
}

/// A header value such as `multipart/related; boundary="abc"`: the type and its parameters.
struct MediaType: Sendable {
    /// The type, lower-cased (`multipart/related`).
    let type: String
    /// Parameters by lower-cased name, values unquoted.
    let parameters: [String: String]

    /// Parses a header value.
    init(parsing value: String) {
        // Most values have no quotes: split on `;` over the bytes, without reading characters.
        if !value.utf8.contains(UInt8(ascii: "\"")) {
            let pieces = value.utf8.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
            type = Self.trimmed(pieces[0]).lowercased()
            var parameters: [String: String] = [:]
            for piece in pieces.dropFirst() {
                guard let equals = piece.firstIndex(of: UInt8(ascii: "=")) else { continue }
                parameters[Self.trimmed(piece[..<equals]).lowercased()] = Self.trimmed(piece[piece.index(after: equals)...])
            }
            self.parameters = parameters
            return
        }
        var pieces: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in value {
            if escaped {
                current.append(character)
                escaped = false
            } else if quoted && character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == ";" && !quoted {
                pieces.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        pieces.append(current)
        type = pieces[0].trimmingWhitespace().lowercased()
        var parameters: [String: String] = [:]
        for piece in pieces.dropFirst() {
            guard let equals = piece.firstIndex(of: "=") else { continue }
            parameters[piece[..<equals].trimmingWhitespace().lowercased()] =
                piece[piece.index(after: equals)...].trimmingWhitespace()
        }
        self.parameters = parameters
    }

    /// The `boundary` parameter.
    var boundary: String? { parameters["boundary"] }

    private static func trimmed(_ bytes: Substring.UTF8View) -> String {
        String(Substring(bytes)).trimmingWhitespace()
    }
}

import Foundation

/// The headers of one MIME part, with the parameters CouchDB's formats use.
struct MultipartHeaders: Sendable {
    /// The headers in order, names lower-cased.
    let fields: [(name: String, value: String)]

    /// Headers from their text (`Name: value` lines separated by CRLF).
    init(parsing text: String) {
        fields = text.split(separator: "\r\n").compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].trimmingCharacters(in: .whitespaces).lowercased(),
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
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
        type = pieces[0].trimmingCharacters(in: .whitespaces).lowercased()
        var parameters: [String: String] = [:]
        for piece in pieces.dropFirst() {
            guard let equals = piece.firstIndex(of: "=") else { continue }
            parameters[piece[..<equals].trimmingCharacters(in: .whitespaces).lowercased()] =
                piece[piece.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        self.parameters = parameters
    }

    /// The `boundary` parameter.
    var boundary: String? { parameters["boundary"] }
}

import Locking

/// A `$regex` pattern, compiled once and searched (unanchored, like PCRE's
/// `re:run` in CouchDB) in many strings.
///
/// Swift's `Regex` understands the PCRE syntax selectors use (classes, `\d`,
/// anchors, `(?i)`, lookaround, lazy quantifiers); matching runs over Unicode
/// scalars, as PCRE does over code points.
///
/// CouchDB's PCRE gives up on a runaway backtracking search after a step limit
/// and reports no match. Swift's `Regex` has no such limit, so patterns that
/// quantify a group which itself holds an unbounded quantifier (`(a+)+`,
/// `(\w*)*`, `(a|b+)*`), the classic catastrophic ones, are refused as bad
/// arguments instead of being allowed to spin a thread indefinitely.
final class RegexPattern: Sendable {
    /// The pattern as written.
    let pattern: String
    // `Regex` is not Sendable; searches take turns on the one compiled program.
    private let regex: Locked<Regex<AnyRegexOutput>>

    init(_ pattern: String) throws(StoreError) {
        let invalid = StoreError(.badRequest, error: "bad_arg", reason: "Bad argument for operator $regex: \(JSON.string(pattern).serialized())")
        guard !Self.backtracksCatastrophically(pattern) else { throw invalid }
        do {
            regex = Locked(try Regex(pattern).matchingSemantics(.unicodeScalar))
        } catch {
            throw invalid
        }
        self.pattern = pattern
        _ = matches("")
    }

    /// Whether the pattern occurs anywhere in `string`.
    func matches(_ string: String) -> Bool {
        regex.withLock { (try? $0.firstMatch(in: string)) != nil }
    }

    /// Whether a quantified group holds an unbounded quantifier (nested
    /// repetition), found by a scan that skips escapes and character classes.
    static func backtracksCatastrophically(_ pattern: String) -> Bool {
        let characters = Array(pattern.unicodeScalars)
        var groupHasUnbounded: [Bool] = [false]
        var index = 0
        // Whether the quantifier starting at `at` is unbounded: `*`, `+`, `{n,}`.
        func unboundedQuantifier(at: Int) -> Bool {
            guard at < characters.count else { return false }
            switch characters[at] {
            case "*", "+": return true
            case "{":
                var end = at + 1
                while end < characters.count, characters[end] != "}" { end += 1 }
                guard end < characters.count else { return false }
                let body = String(String.UnicodeScalarView(characters[(at + 1)..<end]))
                return body.hasSuffix(",") && body.dropLast().allSatisfy(\.isNumber) && !body.dropLast().isEmpty
            default: return false
            }
        }
        while index < characters.count {
            switch characters[index] {
            case "\\":
                index += 2
                if unboundedQuantifier(at: index) { groupHasUnbounded[groupHasUnbounded.count - 1] = true }
                continue
            case "[":
                index += 1
                if index < characters.count, characters[index] == "^" { index += 1 }
                if index < characters.count, characters[index] == "]" { index += 1 }
                while index < characters.count, characters[index] != "]" {
                    index += characters[index] == "\\" ? 2 : 1
                }
                index += 1
                if unboundedQuantifier(at: index) { groupHasUnbounded[groupHasUnbounded.count - 1] = true }
                continue
            case "(":
                groupHasUnbounded.append(false)
            case ")":
                let inner = groupHasUnbounded.count > 1 ? groupHasUnbounded.removeLast() : false
                if unboundedQuantifier(at: index + 1) {
                    if inner { return true }
                    groupHasUnbounded[groupHasUnbounded.count - 1] = true
                } else if inner {
                    groupHasUnbounded[groupHasUnbounded.count - 1] = true
                }
            default:
                if unboundedQuantifier(at: index + 1) { groupHasUnbounded[groupHasUnbounded.count - 1] = true }
            }
            index += 1
        }
        return false
    }
}

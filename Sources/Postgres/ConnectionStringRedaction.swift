/// Redacts the password in a libpq connection string or URI, for logs and error messages.
///
/// - `postgresql://u:secret@h/db` → `postgresql://u:***@h/db` (also `postgres://`, and a `password=` query
///   parameter: `postgresql://h/db?password=***`)
/// - `password=secret host=h` → `password=*** host=h` (quoted values such as `password='a b'` too)
/// - a connection string given as the value of `dbname=` is redacted as well.
///
/// Everything else is kept as written. Text that cannot be parsed keeps nothing after a `password` keyword.
public func redactConnectionString(_ connectionString: String) -> String {
    if ConnectionStringRedaction.isURI(connectionString) {
        return ConnectionStringRedaction.redactURI(connectionString)
    }
    return ConnectionStringRedaction.redactKeywordValue(connectionString)
}

/// The parsing behind ``redactConnectionString(_:)``.
enum ConnectionStringRedaction {
    static let mask = "***"

    static func isURI(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    /// `scheme://[user[:password]@]hosts[/db][?params]`
    static func redactURI(_ uri: String) -> String {
        guard let schemeEnd = uri.range(of: "://")?.upperBound else { return uri }
        let rest = uri[schemeEnd...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var result = String(uri[..<schemeEnd])
        let authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                result += userInfo[..<colon] + ":" + mask
            } else {
                result += userInfo
            }
            result += authority[at...]
        } else {
            result += authority
        }
        let tail = rest[authorityEnd...]
        guard let question = tail.firstIndex(of: "?") else {
            return result + tail
        }
        result += tail[...question]
        let parameters = tail[tail.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false)
        result += parameters.map { parameter -> String in
            guard let equals = parameter.firstIndex(of: "=") else { return String(parameter) }
            let name = parameter[..<equals].lowercased()
            let value = String(parameter[parameter.index(after: equals)...])
            if name == "password" {
                return parameter[...equals] + mask
            }
            if name == "dbname", value.contains("%3D") || value.contains("%3d") || value.contains("://") {
                return parameter[...equals] + mask
            }
            return String(parameter)
        }.joined(separator: "&")
        return result
    }

    /// `keyword = value …` where a value is a bare word or single-quoted with `\'` and `\\` escapes.
    static func redactKeywordValue(_ text: String) -> String {
        let characters = Array(text)
        var result = ""
        var index = 0
        func skipSpaces() {
            while index < characters.count, characters[index].isWhitespace {
                result.append(characters[index])
                index += 1
            }
        }
        while index < characters.count {
            skipSpaces()
            guard index < characters.count else { break }
            // Keyword.
            var keyword = ""
            while index < characters.count, characters[index] != "=", !characters[index].isWhitespace {
                keyword.append(characters[index])
                index += 1
            }
            result += keyword
            skipSpaces()
            guard index < characters.count, characters[index] == "=" else {
                if keyword.lowercased().hasPrefix("password") {
                    // Malformed around a password: keep nothing after it.
                    return result + "=" + mask
                }
                continue
            }
            result.append("=")
            index += 1
            skipSpaces()
            // Value.
            var value = ""
            var raw = ""
            if index < characters.count, characters[index] == "'" {
                raw.append("'")
                index += 1
                var closed = false
                while index < characters.count {
                    let character = characters[index]
                    raw.append(character)
                    index += 1
                    if character == "\\", index < characters.count {
                        value.append(characters[index])
                        raw.append(characters[index])
                        index += 1
                    } else if character == "'" {
                        closed = true
                        break
                    } else {
                        value.append(character)
                    }
                }
                if !closed, keyword.lowercased() == "password" {
                    return result + mask
                }
            } else {
                while index < characters.count, !characters[index].isWhitespace {
                    let character = characters[index]
                    raw.append(character)
                    index += 1
                    if character == "\\", index < characters.count {
                        value.append(characters[index])
                        raw.append(characters[index])
                        index += 1
                    } else {
                        value.append(character)
                    }
                }
            }
            switch keyword.lowercased() {
            case "password":
                result += mask
            case "dbname" where isURI(value) || value.contains("="):
                let redacted = redactConnectionString(value)
                result += redacted == value ? raw : quoted(redacted)
            default:
                result += raw
            }
        }
        return result
    }

    private static func quoted(_ value: String) -> String {
        var text = "'"
        for character in value {
            if character == "'" || character == "\\" {
                text.append("\\")
            }
            text.append(character)
        }
        return text + "'"
    }
}

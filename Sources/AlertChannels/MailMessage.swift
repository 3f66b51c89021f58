import Crypto
import Foundation

/// A notice as an Internet message (RFC 5322): plain text in UTF-8, quoted-printable, its subject and sender's name
/// as RFC 2047 encoded words when they are not ASCII. Pure: no I/O, CRLF line ends, not yet dot-stuffed.
enum MailMessage {
    /// `notice` from `from` (`address` or `Name <address>`) to `to`, dated `date`.
    static func render(_ notice: Notice, from: String, to: String, date: Date) throws(DeliveryError) -> [UInt8] {
        let sender = try Mailbox(from)
        guard MailSender.isValidAddress(to) else { throw .permanent("the recipient is not a plain email address") }
        guard !notice.subject.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }),
            notice.subject.count <= 500
        else { throw .permanent("the subject has a line break or a control character, or is too long") }
        var lines = [
            "Date: " + rfc5322Date(date),
            "From: " + sender.header,
            "To: <\(to)>",
            "Subject: " + encodedHeaderText(notice.subject),
            "Message-ID: " + messageID(for: notice.id, domain: sender.domain),
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: quoted-printable",
            "Auto-Submitted: auto-generated",
        ]
        lines.append("")
        var text = notice.text
        if let url = notice.url { text += "\n\n" + url }
        return Array(lines.joined(separator: "\r\n").utf8) + Array("\r\n".utf8) + quotedPrintable(text)
    }

    /// `Thu, 03 Dec 2026 19:48:39 +0000`.
    static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }

    /// `<id@domain>`: the notice's id when it is letters, digits, `-` and `_`, else a hash of it; the same for every
    /// attempt at the same notice, so a receiver can tell a retry from a new message.
    static func messageID(for id: String, domain: String) -> String {
        let plain =
            !id.isEmpty && id.utf8.count <= 64
            && id.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || "0123456789-_".unicodeScalars.contains($0))
            }
        let local =
            plain ? id : "n" + SHA256.hash(data: Array(id.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
        return "<\(local)@\(domain)>"
    }

    /// Header text as is when it is printable ASCII, else RFC 2047 `=?utf-8?B?…?=` words of whole characters, each
    /// within 75 characters, folded onto lines of their own within 78.
    static func encodedHeaderText(_ text: String) -> String {
        if text.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) }), !text.contains("=?"),
            text.utf8.count <= 900
        {
            return text
        }
        var words: [String] = []
        var chunk: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            // 39 bytes make a word of 64 characters, so that "Subject: " and it fit in 78; later words have the
            // line to themselves: 45 bytes, 72 characters.
            if chunk.count + bytes.count > (words.isEmpty ? 39 : 45), !chunk.isEmpty {
                words.append("=?utf-8?B?" + Data(chunk).base64EncodedString() + "?=")
                chunk = []
            }
            chunk += bytes
        }
        if !chunk.isEmpty { words.append("=?utf-8?B?" + Data(chunk).base64EncodedString() + "?=") }
        return words.joined(separator: "\r\n ")
    }

    /// Quoted-printable (RFC 2045 §6.7) of `text`'s UTF-8, with CRLF line ends and soft breaks within 76 characters.
    static func quotedPrintable(_ text: String) -> [UInt8] {
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        var out: [UInt8] = []
        let hex = Array("0123456789ABCDEF".utf8)
        for line in normalized.split(separator: "\n", omittingEmptySubsequences: false) {
            let bytes = Array(line.utf8)
            var width = 0
            for (index, byte) in bytes.enumerated() {
                let last = index == bytes.count - 1
                let literal = (33...126).contains(byte) && byte != UInt8(ascii: "=") || (byte == 0x20 && !last)
                let encoded = literal ? [byte] : [UInt8(ascii: "="), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
                // A soft break ("=" at the line's end) keeps every line within 76 characters.
                if width + encoded.count > 75 {
                    out += Array("=\r\n".utf8)
                    width = 0
                }
                out += encoded
                width += encoded.count
            }
            out += Array("\r\n".utf8)
        }
        return out
    }

    /// Dot-stuffing (RFC 5321 §4.5.2) and the end-of-data mark: what goes after `DATA`.
    static func dataSection(_ message: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(message.count + 16)
        var atLineStart = true
        for byte in message {
            if atLineStart, byte == UInt8(ascii: ".") { out.append(byte) }
            out.append(byte)
            atLineStart = byte == 0x0A
        }
        if !atLineStart { out += Array("\r\n".utf8) }
        return out + Array(".\r\n".utf8)
    }
}

/// The sender as configured: `alerts@example.com` or `outletd <alerts@example.com>`.
struct Mailbox {
    var name: String?
    var address: String

    init(_ text: String) throws(DeliveryError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix(">"), let open = trimmed.lastIndex(of: "<") {
            address = String(trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)])
            let rawName = trimmed[..<open].trimmingCharacters(in: .whitespaces)
            let unquoted =
                rawName.hasPrefix("\"") && rawName.hasSuffix("\"") && rawName.count >= 2
                ? String(rawName.dropFirst().dropLast()) : rawName
            name = unquoted.isEmpty ? nil : unquoted
        } else {
            address = trimmed
        }
        guard MailSender.isValidAddress(address) else { throw .permanent("the sender is not a plain email address") }
        if let name,
            name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) || name.count > 100
        {
            throw .permanent("the sender's name has a line break or a control character, or is too long")
        }
    }

    var domain: String { String(address[address.index(after: address.lastIndex(of: "@") ?? address.startIndex)...]) }

    /// The `From:` value.
    var header: String {
        guard let name else { return "<\(address)>" }
        if name.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) }), !name.contains("=?") {
            let escaped = name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            return "\"\(escaped)\" <\(address)>"
        }
        // The address on a folded line of its own keeps the last encoded word's line within 78 characters.
        return MailMessage.encodedHeaderText(name) + "\r\n <\(address)>"
    }
}

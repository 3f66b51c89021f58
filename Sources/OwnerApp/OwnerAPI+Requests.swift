import Foundation
import Hummingbird
import NIOCore
import Telemetry

/// Reading requests: every field checked, and a 4xx naming it when it is wrong, never a 500.
extension OwnerAPI {
    /// An owner's name for an outlet.
    static let nameRule = OwnerText.Rule(maxScalars: 100, maxBytes: 400, allowsEmpty: false)
    /// An outlet's description: tab and newline allowed.
    static let descriptionRule = OwnerText.Rule(maxScalars: 500, maxBytes: 2_000, allowsTabAndNewline: true)
    /// A user name as typed at login (stored names are narrower: `^[A-Za-z0-9_.@-]{1,64}$`).
    static let userNameRule = OwnerText.Rule(maxScalars: 64, maxBytes: 256, allowsEmpty: false)
    /// A password as sent: any text up to this many bytes (bcrypt reads 72; a longer one never logs in).
    static let passwordMaxBytes = 1_024
    /// The years a date or instant of a request may fall in.
    static let years = 1_970...9_999

    static func noOutlet(_ code: String) -> HTTPError {
        HTTPError(.notFound, message: "no outlet \(code)")
    }

    /// The `{code}` of the path; a code that cannot exist is a 404 like any other unknown one.
    static func code(_ context: OwnerRequestContext) throws -> String {
        let code = context.parameters.get("code") ?? ""
        guard DeviceCode.isValid(code) else { throw HTTPError(.notFound, message: "no such outlet") }
        return code
    }

    /// The body as a JSON object: 415 unless `Content-Type` is JSON, 413 when too large, 400 saying what is wrong
    /// with it otherwise.
    static func jsonObject(_ request: Request, context: OwnerRequestContext) async throws -> [String: JSONValue] {
        var request = request
        return try await jsonObject(collecting: &request, context: context)
    }

    /// ``jsonObject(_:context:)``, leaving the collected body in `request` for a decoder to read again.
    static func jsonObject(
        collecting request: inout Request, context: OwnerRequestContext
    ) async throws -> [String: JSONValue] {
        guard isJSON(request.headers[.contentType]) else {
            throw HTTPError(.unsupportedMediaType, message: "body: send it as Content-Type: application/json")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: context.maxUploadSize)
        } catch {
            throw HTTPError(.contentTooLarge, message: "body: larger than \(context.maxUploadSize) bytes")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(Array(buffer.readableBytesView))
        } catch {
            throw HTTPError(.badRequest, message: "body: not JSON (\(error))")
        }
        guard case .object(let members) = value else {
            throw HTTPError(.badRequest, message: "body: expected a JSON object, got \(value.typeName)")
        }
        return members
    }

    /// Whether a `Content-Type` value is `application/json` (any case, parameters such as charset allowed).
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first ?? ""
        return mediaType.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
    }

    /// Query parameter `name` as an RFC 3339 instant (`2026-11-25T03:00:00Z`) in years 1970–9999, nil when absent.
    static func instant(_ request: Request, _ name: String) throws -> Date? {
        guard let text = request.uri.queryParameters[name[...]] else { return nil }
        guard let date = RFC3339.date(from: String(text)) else {
            throw HTTPError(.badRequest, message: "\(name): expected an RFC 3339 time like 2026-11-25T03:00:00Z")
        }
        guard let year = Int(text.prefix(4)), years.contains(year), date >= Date(timeIntervalSince1970: 0) else {
            throw HTTPError(.badRequest, message: "\(name): must fall in the years 1970–9999")
        }
        return date
    }

    /// Query parameter `name` as a calendar date `YYYY-MM-DD` in years 1970–9999, nil when absent.
    static func date(_ request: Request, _ name: String) throws -> String? {
        guard let text = request.uri.queryParameters[name[...]].map(String.init) else { return nil }
        guard let date = RFC3339.calendarDate(text) else {
            throw HTTPError(.badRequest, message: "\(name): expected YYYY-MM-DD")
        }
        guard years.contains(date.year) else {
            throw HTTPError(.badRequest, message: "\(name): must fall in the years 1970–9999")
        }
        return text
    }
}

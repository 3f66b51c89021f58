import Foundation
import Telemetry

/// What an incident says, in English and Brazilian Portuguese: a subject line and a plain-text body, the same for
/// email, Web Push and webhooks (whose JSON carries the fields as well). The outlet's name comes from its owner:
/// it is made inert (control characters written out) before it goes into a message.
public struct AlertMessage: Sendable, Equatable {
    public var subject: String
    public var text: String
}

/// The facts a message is made of.
public struct AlertFacts: Sendable, Equatable {
    public var kind: AlertKind
    public var event: AlertEventKind
    /// The outlet's name, else its code; nil for a budget over all the owner's outlets.
    public var outlet: String?
    /// The figure compared (W, seconds offline, money) as text, and the rule's limit as text.
    public var observed: String?
    public var limit: String?
    public var currency: String?

    public init(
        kind: AlertKind, event: AlertEventKind, outlet: String?, observed: String? = nil, limit: String? = nil,
        currency: String? = nil
    ) {
        self.kind = kind
        self.event = event
        self.outlet = outlet
        self.observed = observed
        self.limit = limit
        self.currency = currency
    }
}

public enum AlertText {
    /// The message of `facts` in `language`.
    public static func message(_ facts: AlertFacts, language: AlertLanguage) -> AlertMessage {
        let outlet = facts.outlet.map(OwnerText.inert)
        let pt = language == .ptBR
        let name = outlet ?? (pt ? "todas as tomadas" : "all outlets")
        let money = { (value: String?) -> String in
            guard let value else { return "?" }
            return facts.currency.map { "\($0) \(value)" } ?? value
        }
        let headline: String
        switch (facts.kind, pt) {
        case (.offline, false): headline = "\(name) is offline"
        case (.offline, true): headline = "\(name) está offline"
        case (.onTooLong, false): headline = "\(name) has been on too long"
        case (.onTooLong, true): headline = "\(name) está ligada há tempo demais"
        case (.standby, false): headline = "\(name) draws too much in standby"
        case (.standby, true): headline = "\(name) consome demais em espera"
        case (.budget, false): headline = "\(name): this month will cost more than \(money(facts.limit))"
        case (.budget, true): headline = "\(name): este mês vai custar mais de \(money(facts.limit))"
        case (.commandFailed, false): headline = "\(name) did not confirm a switch"
        case (.commandFailed, true): headline = "\(name) não confirmou um comando"
        }
        let status: String
        switch (facts.event, pt) {
        case (.opened, false): status = "Alert"
        case (.opened, true): status = "Alerta"
        case (.resolved, false): status = "Resolved"
        case (.resolved, true): status = "Resolvido"
        case (.acknowledged, false): status = "Acknowledged"
        case (.acknowledged, true): status = "Reconhecido"
        case (.snoozed, false): status = "Snoozed"
        case (.snoozed, true): status = "Adiado"
        }
        var lines = ["\(status): \(headline)."]
        if let detail = detail(facts, pt: pt, money: money) { lines.append(detail) }
        lines.append("— outletd")
        return AlertMessage(subject: "[outletd] \(status): \(headline)", text: lines.joined(separator: "\n"))
    }

    private static func detail(_ facts: AlertFacts, pt: Bool, money: (String?) -> String) -> String? {
        guard facts.event == .opened, let observed = facts.observed else { return nil }
        switch (facts.kind, pt) {
        case (.offline, false): return "No reading for \(observed) s."
        case (.offline, true): return "Sem leituras há \(observed) s."
        case (.onTooLong, false): return "On for \(observed) s (limit \(facts.limit ?? "?") s)."
        case (.onTooLong, true): return "Ligada há \(observed) s (limite \(facts.limit ?? "?") s)."
        case (.standby, false): return "Standby \(observed) W (limit \(facts.limit ?? "?") W)."
        case (.standby, true): return "Espera \(observed) W (limite \(facts.limit ?? "?") W)."
        case (.budget, false): return "Projected for the month: \(money(observed))."
        case (.budget, true): return "Projeção do mês: \(money(observed))."
        case (.commandFailed, false): return "The command ended \(observed)."
        case (.commandFailed, true): return "O comando terminou como \(observed)."
        }
    }
}

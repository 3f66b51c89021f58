import Foundation

/// A rule's parameters as the API, the CLI and the database carry them; which apply depends on the kind
/// (``AlertRule/validated(kind:parameters:wholeFleet:)``). Durations in seconds, power in watts, money as decimal text
/// in the currency of the outlets' tariff (never a floating-point value).
public struct AlertParameters: Sendable, Equatable, Codable {
    /// offline: seconds without a reading; nil: the larger of 3 × the outlet's usual interval and 60 s.
    public var afterSeconds: Int?
    /// on-too-long: seconds on (or above `watts`) before the alert opens.
    public var forSeconds: Int?
    /// on-too-long: "on" means drawing more than this (nil: the reported switch state); standby: the limit.
    public var watts: Double?
    /// budget: the projected month cost's limit, decimal text (`"120.50"`).
    public var amount: String?
    /// Every kind: how long the condition must stay clear before the incident resolves (hysteresis).
    public var resolveAfterSeconds: Int?

    public init(
        afterSeconds: Int? = nil, forSeconds: Int? = nil, watts: Double? = nil, amount: String? = nil,
        resolveAfterSeconds: Int? = nil
    ) {
        self.afterSeconds = afterSeconds
        self.forSeconds = forSeconds
        self.watts = watts
        self.amount = amount
        self.resolveAfterSeconds = resolveAfterSeconds
    }

    enum CodingKeys: String, CodingKey {
        case afterSeconds = "after_seconds"
        case forSeconds = "for_seconds"
        case watts, amount
        case resolveAfterSeconds = "resolve_after_seconds"
    }
}

/// A rule whose parameters were checked: defaults filled in, bounds kept. Everything outletd stores went through
/// ``validated(kind:parameters:wholeFleet:)``.
public struct AlertRule: Sendable, Equatable {
    public var kind: AlertKind
    public var parameters: AlertParameters

    /// A rule as stored: its parameters were validated when it was set (the table's checks keep the same bounds).
    public init(stored kind: AlertKind, parameters: AlertParameters) {
        self.kind = kind
        self.parameters = parameters
    }

    init(kind: AlertKind, parameters: AlertParameters) {
        self.kind = kind
        self.parameters = parameters
    }

    /// Bounds and defaults, one place (docs/ALERTS.md repeats them).
    public enum Bounds {
        /// offline `after`: 30 s … 7 days.
        public static let afterSeconds = 30...604_800
        /// The floor of offline's automatic `after`.
        public static let automaticAfterFloorSeconds = 60
        /// on-too-long `for`: 1 minute … 7 days; default 1 hour.
        public static let forSeconds = 60...604_800
        public static let defaultForSeconds = 3_600
        /// on-too-long and standby `watts`: 0.1 W … 100 kW.
        public static let watts = 0.1...100_000.0
        /// budget `amount`: above 0, at most 1,000,000,000, at most 6 decimals.
        public static let maxAmount: Decimal = 1_000_000_000
        public static let amountDecimals = 6
        /// `resolve_after`: 0 … 1 day.
        public static let resolveAfterSeconds = 0...86_400
    }

    /// The default hysteresis of a kind: offline waits 2 minutes of readings before it resolves (an outlet bouncing
    /// on and off line is one incident), on-too-long 1 minute; the others resolve as soon as they clear (their
    /// figures move slowly or their clearing is an event).
    public static func defaultResolveAfterSeconds(_ kind: AlertKind) -> Int {
        switch kind {
        case .offline: 120
        case .onTooLong: 60
        case .standby, .budget, .commandFailed: 0
        }
    }

    /// Why a rule was refused: ``description`` is the reason the API and the CLI give.
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case notAParameter(name: String, kind: AlertKind)
        case missing(name: String, kind: AlertKind)
        case outOfBounds(name: String, bounds: String)
        case badAmount(String)
        case needsOutlet(AlertKind)

        public var description: String {
            switch self {
            case .notAParameter(let name, let kind): "\(name) is not a parameter of \(kind.rawValue)"
            case .missing(let name, let kind): "\(kind.rawValue) needs \(name)"
            case .outOfBounds(let name, let bounds): "\(name) must be within \(bounds)"
            case .badAmount(let text):
                "amount must be a decimal number above 0 and at most \(Bounds.maxAmount) with at most "
                    + "\(Bounds.amountDecimals) decimals, not \"\(text)\""
            case .needsOutlet(let kind): "\(kind.rawValue) is a rule on one outlet: name the outlet"
            }
        }
    }

    /// Checks `parameters` for `kind` and fills in the defaults. `wholeFleet` says the rule covers all of the
    /// owner's outlets rather than one: every kind allows it (each outlet is then its own incident) except budget,
    /// whose whole-fleet rule is one incident for the owner's total.
    public static func validated(kind: AlertKind, parameters: AlertParameters, wholeFleet: Bool = false) throws(Problem)
        -> AlertRule
    {
        var result = AlertParameters()
        func refuse(_ name: String, _ present: Bool) throws(Problem) {
            if present { throw .notAParameter(name: name, kind: kind) }
        }
        switch kind {
        case .offline:
            try refuse("for_seconds", parameters.forSeconds != nil)
            try refuse("watts", parameters.watts != nil)
            try refuse("amount", parameters.amount != nil)
            if let after = parameters.afterSeconds {
                guard Bounds.afterSeconds.contains(after) else {
                    throw .outOfBounds(name: "after_seconds", bounds: Self.text(Bounds.afterSeconds))
                }
                result.afterSeconds = after
            }
        case .onTooLong:
            try refuse("after_seconds", parameters.afterSeconds != nil)
            try refuse("amount", parameters.amount != nil)
            let seconds = parameters.forSeconds ?? Bounds.defaultForSeconds
            guard Bounds.forSeconds.contains(seconds) else {
                throw .outOfBounds(name: "for_seconds", bounds: Self.text(Bounds.forSeconds))
            }
            result.forSeconds = seconds
            if let watts = parameters.watts { result.watts = try checkedWatts(watts) }
        case .standby:
            try refuse("after_seconds", parameters.afterSeconds != nil)
            try refuse("for_seconds", parameters.forSeconds != nil)
            try refuse("amount", parameters.amount != nil)
            guard let watts = parameters.watts else { throw .missing(name: "watts", kind: kind) }
            result.watts = try checkedWatts(watts)
        case .budget:
            try refuse("after_seconds", parameters.afterSeconds != nil)
            try refuse("for_seconds", parameters.forSeconds != nil)
            try refuse("watts", parameters.watts != nil)
            guard let amount = parameters.amount else { throw .missing(name: "amount", kind: kind) }
            result.amount = try checkedAmount(amount)
        case .commandFailed:
            try refuse("after_seconds", parameters.afterSeconds != nil)
            try refuse("for_seconds", parameters.forSeconds != nil)
            try refuse("watts", parameters.watts != nil)
            try refuse("amount", parameters.amount != nil)
        }
        let resolve = parameters.resolveAfterSeconds ?? defaultResolveAfterSeconds(kind)
        guard Bounds.resolveAfterSeconds.contains(resolve) else {
            throw .outOfBounds(name: "resolve_after_seconds", bounds: Self.text(Bounds.resolveAfterSeconds))
        }
        result.resolveAfterSeconds = resolve
        return AlertRule(kind: kind, parameters: result)
    }

    /// How long the condition must hold before the incident opens: on-too-long's `for`; 0 for the others, whose
    /// conditions carry their own delay (offline's `after`) or are slow figures.
    public var holdSeconds: Int { kind == .onTooLong ? parameters.forSeconds ?? Bounds.defaultForSeconds : 0 }

    /// The hysteresis, in seconds.
    public var resolveAfterSeconds: Int { parameters.resolveAfterSeconds ?? Self.defaultResolveAfterSeconds(kind) }

    /// offline's `after` for an outlet whose readings usually come every `usualIntervalSeconds` (nil: not known):
    /// the rule's own, else the larger of 3 × the usual interval and 60 s.
    public static func offlineAfterSeconds(rule: Int?, usualIntervalSeconds: Double?) -> Double {
        if let rule { return Double(rule) }
        let floor = Double(Bounds.automaticAfterFloorSeconds)
        guard let usual = usualIntervalSeconds, usual.isFinite, usual > 0 else { return floor }
        return max(3 * usual, floor)
    }

    private static func checkedWatts(_ watts: Double) throws(Problem) -> Double {
        guard watts.isFinite, Bounds.watts.contains(watts) else {
            throw .outOfBounds(name: "watts", bounds: "0.1…100000 W")
        }
        return watts
    }

    /// `text` as a canonical decimal (no exponent, no sign, at most six decimals), or a problem.
    static func checkedAmount(_ text: String) throws(Problem) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let parts = trimmed.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, !whole.isEmpty,
            whole.allSatisfy({ $0.isASCII && $0.isNumber }), whole.count <= 10
        else { throw .badAmount(text) }
        let fraction = parts.count == 2 ? parts[1] : ""
        guard fraction.allSatisfy({ $0.isASCII && $0.isNumber }), fraction.count <= Bounds.amountDecimals,
            parts.count == 1 || !fraction.isEmpty
        else { throw .badAmount(text) }
        guard let value = Decimal(string: trimmed, locale: Locale(identifier: "en_US_POSIX")), value > 0,
            value <= Bounds.maxAmount
        else { throw .badAmount(text) }
        let wholeDigits = whole.drop { $0 == "0" }
        return (wholeDigits.isEmpty ? "0" : String(wholeDigits)) + (fraction.isEmpty ? "" : "." + fraction)
    }

    private static func text(_ range: ClosedRange<Int>) -> String { "\(range.lowerBound)…\(range.upperBound) s" }
}

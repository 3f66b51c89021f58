import Foundation
import Telemetry
import Yams

/// Reads a tariff file (YAML, docs/ROLLUPS.md "Cost") into a ``Telemetry/Tariff``, or every problem found as
/// `FILE:LINE: reason`. Nothing is half-read: a file with any problem gives no tariff.
public enum TariffFile {
    /// What is wrong with a tariff file, one line per problem.
    public struct Problems: Error, CustomStringConvertible, Sendable {
        public var lines: [String]
        public var description: String { lines.joined(separator: "\n") }
    }

    /// Reads the file at `path`.
    public static func load(path: String) throws(Problems) -> Tariff {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw Problems(lines: ["\(path): cannot read: \(error.localizedDescription)"])
        }
        return try parse(text, source: path)
    }

    /// Reads `text`; `source` names it in the problems.
    public static func parse(_ text: String, source: String) throws(Problems) -> Tariff {
        var reader = Reader(source: source)
        let tariff = reader.read(text)
        guard reader.problems.isEmpty, let tariff else {
            throw Problems(lines: reader.problems.isEmpty ? ["\(source): not a tariff"] : reader.problems)
        }
        return tariff
    }

    /// The keys of a tariff file.
    static let keys: Set<String> = [
        "currency", "time_zone", "valid_from", "price_per_kwh", "bands", "holidays", "monthly_adders_per_kwh",
        "taxes_percent",
    ]
    static let bandKeys: Set<String> = ["name", "days", "from", "to", "price_per_kwh"]

    private struct Reader {
        let source: String
        var problems: [String] = []

        init(source: String) {
            self.source = source
        }

        mutating func problem(_ node: Node?, _ message: String) {
            let line = node?.mark.map { ":\($0.line)" } ?? ""
            problems.append("\(source)\(line): \(message)")
        }

        mutating func read(_ text: String) -> Tariff? {
            let root: Node?
            do {
                root = try Yams.compose(yaml: text)
            } catch {
                problem(nil, "not valid YAML: \(error)")
                return nil
            }
            guard let root, case .mapping(let mapping) = root else {
                problem(root, "expected a mapping of currency, valid_from, price_per_kwh, …")
                return nil
            }
            var fields: [String: Node] = [:]
            for (key, value) in mapping {
                guard let name = key.string, TariffFile.keys.contains(name) else {
                    problem(
                        key,
                        "unknown key \"\(key.string ?? "?")\" (known: \(TariffFile.keys.sorted().joined(separator: ", ")))"
                    )
                    continue
                }
                fields[name] = value
            }
            let currency = required(fields, "currency", in: root).flatMap { node -> String? in
                let code = node.string ?? ""
                guard Self.currencies.contains(code) else {
                    problem(node, "currency: \"\(code)\" is not an ISO 4217 code (BRL, EUR, USD, …)")
                    return nil
                }
                return code
            }
            var timeZone: String?
            if let node = fields["time_zone"], let name = scalar(node, "time_zone") {
                if TimeZone(identifier: name) == nil || name.isEmpty {
                    problem(node, "time_zone: \"\(name)\" is not an IANA time zone (America/Fortaleza, Europe/Berlin)")
                } else {
                    timeZone = name
                }
            }
            let validFrom = required(fields, "valid_from", in: root).flatMap { date($0, "valid_from") }
            let price = required(fields, "price_per_kwh", in: root).flatMap { decimal($0, "price_per_kwh") }
            let taxes = fields["taxes_percent"].map { decimal($0, "taxes_percent") } ?? "0"
            let bands = fields["bands"].map { readBands($0) } ?? []
            var holidays: [String] = []
            if let node = fields["holidays"] {
                if case .sequence(let sequence) = node {
                    holidays = sequence.compactMap { date($0, "holidays") }
                } else {
                    problem(node, "holidays: expected a list of dates like [2026-11-02, 2026-12-25]")
                }
            }
            var adders: [(month: String, perKWh: String)] = []
            if let node = fields["monthly_adders_per_kwh"] {
                if case .mapping(let months) = node {
                    for (key, value) in months {
                        let month = key.string ?? ""
                        guard Self.isMonth(month) else {
                            problem(key, "monthly_adders_per_kwh: \"\(month)\" is not a month like 2026-11")
                            continue
                        }
                        if adders.contains(where: { $0.month == month }) {
                            problem(key, "monthly_adders_per_kwh: \(month) is given twice")
                        }
                        if let amount = decimal(value, "monthly_adders_per_kwh \(month)") {
                            adders.append((month, amount))
                        }
                    }
                    adders.sort { $0.month < $1.month }
                } else {
                    problem(node, #"monthly_adders_per_kwh: expected a mapping like {"2026-11": 0.01885}"#)
                }
            }
            guard let currency, let validFrom, let price, let taxes else { return nil }
            let tariff = Tariff(
                currency: currency, timeZone: timeZone, validFrom: validFrom, pricePerKWh: price,
                bands: bands.map { $0.band }, holidays: holidays, monthlyAdders: adders, taxesPercent: taxes)
            if let (first, second) = tariff.firstOverlap() {
                let shared = Set(tariff.bands[first].days).intersection(tariff.bands[second].days).sorted()
                problem(
                    bands[second].node,
                    "bands: \(tariff.bands[second].name) overlaps \(tariff.bands[first].name) on "
                        + shared.map { $0.rawValue }.joined(separator: ", "))
            }
            return problems.isEmpty ? tariff : nil
        }

        mutating func readBands(_ node: Node) -> [(band: Tariff.Band, node: Node)] {
            guard case .sequence(let sequence) = node else {
                problem(node, "bands: expected a list of {name, days, from, to, price_per_kwh}")
                return []
            }
            var bands: [(band: Tariff.Band, node: Node)] = []
            for item in sequence {
                guard case .mapping(let mapping) = item else {
                    problem(item, "bands: each band is {name, days, from, to, price_per_kwh}")
                    continue
                }
                var fields: [String: Node] = [:]
                for (key, value) in mapping {
                    guard let name = key.string, TariffFile.bandKeys.contains(name) else {
                        problem(
                            key,
                            "bands: unknown key \"\(key.string ?? "?")\" (known: days, from, name, price_per_kwh, to)")
                        continue
                    }
                    fields[name] = value
                }
                let name = required(fields, "name", in: item).flatMap { scalar($0, "bands: name") }
                let days = required(fields, "days", in: item).flatMap { readDays($0) }
                let from = required(fields, "from", in: item).flatMap { node -> Int? in
                    guard let minutes = Tariff.minutes(node.string ?? "", allowsEndOfDay: false) else {
                        problem(node, "bands: from: \"\(node.string ?? "")\" is not a time 00:00–23:59")
                        return nil
                    }
                    return minutes
                }
                let to = required(fields, "to", in: item).flatMap { node -> Int? in
                    guard let minutes = Tariff.minutes(node.string ?? "", allowsEndOfDay: true) else {
                        problem(node, "bands: to: \"\(node.string ?? "")\" is not a time 00:01–24:00")
                        return nil
                    }
                    return minutes
                }
                let price = required(fields, "price_per_kwh", in: item).flatMap { decimal($0, "bands: price_per_kwh") }
                guard let name, let days, let from, let to, let price else { continue }
                guard from < to else {
                    problem(
                        fields["to"] ?? item,
                        "bands: \(name): to (\(Tariff.clock(to))) must be after from (\(Tariff.clock(from))); "
                            + "a band across midnight is written as two")
                    continue
                }
                bands.append(
                    (Tariff.Band(name: name, days: days, fromMinute: from, toMinute: to, pricePerKWh: price), item))
            }
            return bands
        }

        mutating func readDays(_ node: Node) -> [Weekday]? {
            var names: [(String, Node)] = []
            switch node {
            case .sequence(let sequence): names = sequence.map { ($0.string ?? "", $0) }
            case .scalar: names = [(node.string ?? "", node)]
            default: break
            }
            guard !names.isEmpty else {
                problem(node, "bands: days: expected a list like [mon, tue, wed, thu, fri]")
                return nil
            }
            var days: [Weekday] = []
            for (name, item) in names {
                guard let day = Weekday(rawValue: name.lowercased()) else {
                    problem(item, "bands: days: unknown day \"\(name)\" (mon, tue, wed, thu, fri, sat, sun)")
                    return nil
                }
                if !days.contains(day) { days.append(day) }
            }
            return days.sorted()
        }

        mutating func required(_ fields: [String: Node], _ key: String, in parent: Node) -> Node? {
            guard let node = fields[key] else {
                problem(parent, "\(key): required")
                return nil
            }
            return node
        }

        mutating func scalar(_ node: Node, _ field: String) -> String? {
            guard case .scalar(let scalar) = node else {
                problem(node, "\(field): expected a single value")
                return nil
            }
            return scalar.string
        }

        mutating func decimal(_ node: Node, _ field: String) -> String? {
            guard let text = scalar(node, field) else { return nil }
            if text.hasPrefix("-") {
                problem(node, "\(field): \(text) is negative")
                return nil
            }
            guard Tariff.isDecimal(text) else {
                problem(node, "\(field): \"\(text)\" is not a decimal number like 0.62")
                return nil
            }
            return text
        }

        mutating func date(_ node: Node, _ field: String) -> String? {
            guard let text = scalar(node, field) else { return nil }
            guard Self.isDate(text) else {
                problem(node, "\(field): \"\(text)\" is not a date like 2026-11-01")
                return nil
            }
            return text
        }

        static func isDate(_ text: String) -> Bool {
            RFC3339.calendarDate(text).map { (1_970...9_999).contains($0.year) } ?? false
        }

        static func isMonth(_ text: String) -> Bool {
            isDate(text + "-01")
        }

        static let currencies = Set(Locale.commonISOCurrencyCodes)
    }
}

import ArgumentParser
import Config
import Foundation
import Storage
import Telemetry

/// `outletd tariff …`: energy prices as data (docs/ROLLUPS.md, "Cost"). A tariff file is checked whole before
/// anything is stored: a wrong file changes nothing and says `FILE:LINE: reason`.
struct TariffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tariff",
        abstract: "Load, list, show and assign energy tariffs (prices per kWh, time-of-use bands).",
        subcommands: [Set.self, List.self, Show.self, Assign.self])

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Load a tariff file as the version of NAME from its valid_from (earlier versions stay).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The tariff's name (1–64 of A-Z a-z 0-9 _ . -).") var name: String
        @Option(help: "The tariff file (YAML; docs/ROLLUPS.md shows one).") var file: String

        func run() throws {
            let tariff: Tariff
            do {
                tariff = try TariffFile.load(path: file)
            } catch {
                printError(error.description)
                throw ExitCode(65)  // EX_DATAERR
            }
            let source = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            let replaced = try options.withDatabase { connection in
                try TariffStore(connection: connection).set(name: name, tariff: tariff, source: source)
            }
            print(
                "tariff \(name): \(replaced ? "replaced the" : "loaded a") version from \(tariff.validFrom) "
                    + "(\(tariff.currency), \(tariff.bands.count) band\(tariff.bands.count == 1 ? "" : "s"), "
                    + "\(tariff.holidays.count) holiday\(tariff.holidays.count == 1 ? "" : "s"), "
                    + "\(tariff.monthlyAdders.count) monthly adder\(tariff.monthlyAdders.count == 1 ? "" : "s"))")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the tariffs and where they are assigned.")
        @OptionGroup var options: GlobalOptions
        @OptionGroup var output: OutputOptions

        func run() throws {
            let tariffs = try options.withDatabase { connection in try TariffStore(connection: connection).list() }
            if output.format == .json {
                print(
                    try JSONOutput.render(
                        tariffs.map { tariff -> [String: Any] in
                            [
                                "name": tariff.name, "currency": tariff.currency, "versions": tariff.versionCount,
                                "latest_valid_from": JSONOutput.value(tariff.latestValidFrom),
                                "assigned_to": tariff.assignments,
                            ]
                        }))
                return
            }
            let rows = tariffs.map {
                [
                    $0.name, $0.currency, String($0.versionCount), $0.latestValidFrom ?? "",
                    $0.assignments.joined(separator: ", "),
                ]
            }
            print(TextTable.render(header: ["NAME", "CURRENCY", "VERSIONS", "LATEST FROM", "ASSIGNED TO"], rows: rows))
            print("\(tariffs.count) tariff\(tariffs.count == 1 ? "" : "s")")
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show every version of a tariff.")
        @OptionGroup var options: GlobalOptions
        @Argument var name: String
        @OptionGroup var output: OutputOptions

        func run() throws {
            let versions = try options.withDatabase { connection in
                try TariffStore(connection: connection).versions(name: name)
            }
            if output.format == .json {
                print(try JSONOutput.render(["name": name, "versions": versions.map(Self.object)]))
                return
            }
            for (index, version) in versions.enumerated() {
                let tariff = version.tariff
                if index > 0 { print() }
                print(
                    "version from \(version.validFrom)\(index == versions.count - 1 ? "" : " until \(versions[index + 1].validFrom)")"
                )
                print("  currency:      \(tariff.currency)")
                print("  clock:         \(tariff.timeZone ?? "each outlet's own time zone")")
                print("  base price:    \(tariff.pricePerKWh) per kWh")
                for band in tariff.bands {
                    let days = band.days.map(\.rawValue).joined(separator: ",")
                    print(
                        "  band:          \(band.name) \(days) \(Tariff.clock(band.fromMinute))–\(Tariff.clock(band.toMinute)) "
                            + "\(band.pricePerKWh) per kWh")
                }
                if !tariff.holidays.isEmpty { print("  holidays:      \(tariff.holidays.joined(separator: ", "))") }
                for adder in tariff.monthlyAdders { print("  adder \(adder.month): \(adder.perKWh) per kWh") }
                print("  taxes:         \(tariff.taxesPercent) %")
            }
        }

        static func object(_ version: TariffVersionRecord) -> [String: Any] {
            let tariff = version.tariff
            return [
                "valid_from": version.validFrom, "currency": tariff.currency,
                "time_zone": JSONOutput.value(tariff.timeZone), "price_per_kwh": tariff.pricePerKWh,
                "bands": tariff.bands.map { band -> [String: Any] in
                    [
                        "name": band.name, "days": band.days.map(\.rawValue), "from": Tariff.clock(band.fromMinute),
                        "to": Tariff.clock(band.toMinute), "price_per_kwh": band.pricePerKWh,
                    ]
                },
                "holidays": tariff.holidays,
                "monthly_adders_per_kwh": Dictionary(
                    uniqueKeysWithValues: tariff.monthlyAdders.map { ($0.month, $0.perKWh) }),
                "taxes_percent": tariff.taxesPercent, "loaded_at": JSONOutput.value(version.loadedAt),
            ]
        }
    }

    struct Assign: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Assign a tariff: as the default, to an owner's outlets, or to one outlet (outlet beats owner beats default)."
        )
        @OptionGroup var options: GlobalOptions
        @Argument var name: String
        @Flag(name: .customLong("default"), help: "Every outlet without an owner's or its own tariff.")
        var fleetDefault = false
        @Option(help: "The outlets of this app user.") var owner: String?
        @Option(help: "This outlet (its code).") var outlet: String?

        func validate() throws {
            guard [fleetDefault, owner != nil, outlet != nil].filter({ $0 }).count == 1 else {
                throw ValidationError("give exactly one of --default, --owner USER, --outlet CODE")
            }
        }

        func run() throws {
            let scope: TariffScope =
                if let owner { .owner(owner) } else if let outlet { .outlet(outlet) } else { .fleetDefault }
            try options.withDatabase { connection in try TariffStore(connection: connection).assign(name, to: scope) }
            switch scope {
            case .fleetDefault: print("tariff \(name) is the default")
            case .owner(let user): print("tariff \(name) prices the outlets of \(user)")
            case .outlet(let code): print("tariff \(name) prices \(code)")
            }
        }
    }
}

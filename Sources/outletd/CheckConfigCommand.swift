import ArgumentParser
import Config
import Daemon
import Observability
import Runtime
import Storage

/// `outletd check-config`: validates the configuration and prints the effective values.
struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate the configuration (file and OUTLETD_* environment) and print the effective values.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let configuration = try options.loadConfiguration()
        print("configuration is valid (file: \(options.configurationFile ?? "none, defaults"))")
        for key in ConfigurationKey.all {
            print("\(key.path) = \(key.value(in: configuration))")
        }
    }
}

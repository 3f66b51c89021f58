import ArgumentParser
import Observability

/// `outletd`: smart-outlet telemetry from MQTT into PostgreSQL.
@main
struct Outletd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outletd",
        abstract: "Ingest smart-outlet telemetry from MQTT into PostgreSQL; switch outlets on and off.",
        discussion: """
            Configuration comes from --config (default $OUTLETD_CONFIG, else /etc/outletd/outletd.yaml when it \
            exists), then OUTLETD_* environment variables, which override any key \
            (e.g. OUTLETD_DATABASE_URL, OUTLETD_MQTT_URL).
            """,
        // `outletd --version`: the version and git commit make writes in (scripts/build-info), else "dev".
        version: BuildInfo.current.description,
        subcommands: [
            RunCommand.self, MigrateCommand.self, DeviceCommand.self, SwitchCommand.self, StatsCommand.self,
            RollupCommand.self, SimulateCommand.self, CheckConfigCommand.self, BrokerCommand.self, UserCommand.self,
            TariffCommand.self, AutomationCommand.self, AlertCommand.self, StorageCommand.self,
        ]
    )
}

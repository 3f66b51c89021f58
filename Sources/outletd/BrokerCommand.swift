import ArgumentParser
import Foundation

/// `outletd broker …`: what the MQTT broker needs to know about outlets and operators.
struct BrokerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker", abstract: "Broker credentials for outlets, operators and outletd.",
        subcommands: [Credentials.self])

    struct Credentials: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the mosquitto password_file line for a user (an outlet's user is its device code).",
            discussion: """
                Append the line to the broker's password_file (config/mosquitto/mosquitto.conf) and reload \
                mosquitto (SIGHUP). The password is hashed by mosquitto_passwd (PBKDF2-SHA512); with \
                --generate a random one is made and printed once on standard error.
                """)

        @Argument(help: "User name: the outlet's device code, or an operator's or outletd's name.")
        var user: String
        @Option(help: "The password (prefer --password-file or --generate: command lines are visible to others).")
        var password: String?
        @Option(help: "Read the password from this file (first line).")
        var passwordFile: String?
        @Flag(help: "Generate a random password and print it on standard error.")
        var generate = false

        func validate() throws {
            let sources = [password != nil, passwordFile != nil, generate].filter { $0 }.count
            guard sources == 1 else {
                throw ValidationError("give exactly one of --password, --password-file, --generate")
            }
            guard !user.isEmpty, !user.contains(":"), !user.contains("\n") else {
                throw ValidationError("the user name must be non-empty and contain no ':' or newline")
            }
        }

        func run() throws {
            let secret: String
            if let password {
                secret = password
            } else if let passwordFile {
                let text = try String(contentsOfFile: passwordFile, encoding: .utf8)
                secret = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
            } else {
                var generator = SystemRandomNumberGenerator()
                let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789")
                secret = String((0..<24).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
                printError("password for \(user): \(secret)")
            }
            guard !secret.isEmpty else { throw ValidationError("the password is empty") }
            print(try MosquittoPasswordEntry.make(user: user, password: secret))
        }
    }
}

/// A mosquitto password_file line, hashed by the broker's own tool.
enum MosquittoPasswordEntry {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func make(user: String, password: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outletd-passwd-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("passwd").path
        // The password goes in through a file and `-U` would need one per line; `-b` takes it as an
        // argument of a short-lived child of ours only.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["mosquitto_passwd", "-c", "-b", file, user, password]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw Failure(description: "cannot run mosquitto_passwd (apt-get install mosquitto): \(error)")
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw Failure(description: "mosquitto_passwd failed: \(message)")
        }
        let line = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard line.hasPrefix(user + ":") else { throw Failure(description: "unexpected mosquitto_passwd output") }
        return line
    }
}

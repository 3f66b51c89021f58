import ArgumentParser
import Foundation
import OwnerApp
import Storage

#if canImport(Glibc)
    import Glibc
#endif

/// `outletd user …`: the owners who log in to the app (`app.listen`). Passwords are read from standard input or
/// a prompt without echo, stored as bcrypt hashes, and never printed or logged.
struct UserCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Add, list and disable the owners who log in to the app; set passwords.",
        subcommands: [Add.self, List.self, Disable.self, Passwd.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add an owner (asks for the password).")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The login name (1–64 of A-Z a-z 0-9 _ . @ -).") var name: String
        @Flag(help: "Read the password from the first line of standard input instead of a prompt.")
        var passwordStdin = false

        func run() throws {
            let password = try UserCommand.readPassword(fromStandardInput: passwordStdin)
            let hash = PasswordHasher.hash(password)
            _ = try options.withDatabase { connection in
                try OwnerStore(connection: connection).addUser(name: name, passwordHash: hash)
            }
            print("added user \(name)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the owners.")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let users = try options.withDatabase { connection in try OwnerStore(connection: connection).users() }
            let rows = users.map {
                [$0.name, $0.disabled ? "disabled" : "enabled", "\($0.outletCount)", "\($0.activeSessions)"]
            }
            print(TextTable.render(header: ["NAME", "STATE", "OUTLETS", "SESSIONS"], rows: rows))
            print("\(users.count) user\(users.count == 1 ? "" : "s")")
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable an owner: no more logins, every session ends now.")
        @OptionGroup var options: GlobalOptions
        @Argument var name: String

        func run() throws {
            let found = try options.withDatabase { connection in
                try OwnerStore(connection: connection).disableUser(name: name)
            }
            guard found else { throw DeviceStoreError(message: "no user \(name)") }
            print("disabled user \(name); its sessions are revoked")
        }
    }

    struct Passwd: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set an owner's password (asks for it); its sessions end.")
        @OptionGroup var options: GlobalOptions
        @Argument var name: String
        @Flag(help: "Read the password from the first line of standard input instead of a prompt.")
        var passwordStdin = false

        func run() throws {
            let password = try UserCommand.readPassword(fromStandardInput: passwordStdin)
            let hash = PasswordHasher.hash(password)
            let found = try options.withDatabase { connection in
                try OwnerStore(connection: connection).setPasswordHash(name: name, passwordHash: hash)
            }
            guard found else { throw DeviceStoreError(message: "no user \(name)") }
            print("password of \(name) set; its sessions are revoked")
        }
    }

    /// The password: the first line of standard input, or typed twice at a prompt without echo.
    static func readPassword(fromStandardInput: Bool) throws -> String {
        let password: String
        if fromStandardInput {
            guard let line = readLine(strippingNewline: true) else {
                throw ValidationError("--password-stdin: standard input is empty")
            }
            password = line
        } else {
            guard isatty(STDIN_FILENO) == 1 else {
                throw ValidationError("standard input is not a terminal: use --password-stdin")
            }
            let first = try prompt("Password: ")
            let second = try prompt("Password again: ")
            guard first == second else { throw ValidationError("the passwords differ") }
            password = first
        }
        if let problem = PasswordHasher.problem(password) { throw ValidationError(problem) }
        return password
    }

    /// Reads one line from the terminal with echo off.
    private static func prompt(_ text: String) throws -> String {
        FileHandle.standardError.write(Data(text.utf8))
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        guard let line = readLine(strippingNewline: true) else { throw ValidationError("no password given") }
        return line
    }
}

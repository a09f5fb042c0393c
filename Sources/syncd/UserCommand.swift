import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import SyncAgent

/// Manages the users who may log in to the listener.
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Add, remove or list the users who may log in to the listener.",
        subcommands: [Add.self, Remove.self, List.self]
    )

    /// `syncd user add NAME`: sets a user's password (salted PBKDF2 hash; the password is never stored).
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a user, or change the password of an existing one.",
            discussion: "The password is read from --password-file, else from the first line of standard input."
        )

        @OptionGroup var data: DataOptions
        @OptionGroup var control: ControlOptions

        @Argument(help: "The user name.")
        var name: String

        @Option(name: .customLong("password-file"), help: "Read the password from the first line of this file.")
        var passwordFile: String?

        @Flag(help: "Make the user a server admin (role _admin): may create and delete databases, compact, purge, and reach every database.")
        var admin = false

        @Option(name: .customLong("role"), help: "A role for the user (repeatable); databases grant access to roles in their _security.")
        var roles: [String] = []

        func validate() throws {
            guard UserStore.isValidName(name) else { throw ValidationError("invalid user name: it must be non-empty, without ':' or control characters") }
        }

        func run() async throws {
            let text: String
            if let passwordFile {
                text = try String(contentsOfFile: passwordFile, encoding: .utf8)
            } else {
                if isatty(STDIN_FILENO) != 0 { StandardStream.error.write("password: ") }
                text = readLine(strippingNewline: false) ?? ""
            }
            // The first line, whatever ends it (`\n`, `\r\n` or `\r`).
            let password = String(text.prefix { !$0.isNewline })
            guard !password.isEmpty else { throw ValidationError("the password is empty") }
            let given = roles + (admin ? [UserStore.adminRole] : [])
            let saved = try await withNode(data, control) {
                try await $0.control.setUser(name, password: password, roles: admin || !roles.isEmpty ? given : nil)
            }
            print("user \(name) saved\(saved.roles.isEmpty ? "" : " (roles: \(saved.roles.joined(separator: ", ")))")")
        }
    }

    /// `syncd user remove NAME`.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a user.")

        @OptionGroup var data: DataOptions
        @OptionGroup var control: ControlOptions

        @Argument(help: "The user name.")
        var name: String

        func run() async throws {
            guard try await withNode(data, control, { try await $0.control.removeUser(name) }) else {
                StandardStream.error.write("no user \(name)\n")
                throw ExitCode(1)
            }
            print("user \(name) removed")
        }
    }

    /// `syncd user list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the user names.")

        @OptionGroup var data: DataOptions
        @OptionGroup var control: ControlOptions

        func run() async throws {
            for user in try await readNode(data, control, nothing: [], { try await $0.users() }) {
                print(user.roles.isEmpty ? user.name : "\(user.name) (\(user.roles.joined(separator: ", ")))")
            }
        }
    }
}

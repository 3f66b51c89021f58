import CBuildInfo

/// The version and git commit outletd was built from: `outletd --version`, the start-up log line and
/// `outletd_build_info`. `make` writes them into the binary (scripts/build-info); a plain `swift build` says "dev".
public struct BuildInfo: Sendable, Equatable {
    /// The VERSION file's version, or "dev".
    public var version: String
    /// The git commit (12 hex digits, `-dirty` when the sources had uncommitted changes), or "dev".
    public var commit: String

    public init(version: String, commit: String) {
        self.version = version
        self.commit = commit
    }

    /// The build of this binary.
    public static let current = BuildInfo(
        version: String(cString: outletd_build_version()), commit: String(cString: outletd_build_commit()))

    /// `outletd 0.1.0 (commit 6b3aab1c2d3e)`.
    public var description: String { "outletd \(version) (commit \(commit))" }
}

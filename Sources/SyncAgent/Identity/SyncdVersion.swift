/// syncd's own version (`syncd --version`, `GET /` under `vendor`).
public enum SyncdVersion {
    /// The version of this build.
    public static let current = "0.2.0"
}

//! `coroner --version`: the version, the commit and the rule pack.

/// The long version: `0.1.0 (commit 1a2b3c4d5e6f, rules 417 built-in, pack 9f8e7d6c5b4a)`.
pub fn long() -> &'static str {
    static LONG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LONG.get_or_init(|| {
        let commit = match env!("CORONER_COMMIT") {
            "" => String::new(),
            c => format!("commit {c}, "),
        };
        format!(
            "{} ({commit}rule pack {}, {} files)",
            env!("CARGO_PKG_VERSION"),
            coroner_rules::BUILTIN_DIGEST,
            coroner_rules::BUILTIN_RULES.len()
        )
    })
}

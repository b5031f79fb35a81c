//! Shortening text for reports.

/// The first `max` characters of `s`, with `…` after them when cut.
pub fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => format!("{}…", s.get(..at).unwrap_or_default()),
    }
}

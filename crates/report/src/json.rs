//! The JSON report: `schema_version` 1, additive changes only.

use coroner_model::Report;

/// The report as pretty-printed JSON, with a trailing newline.
pub fn render(report: &Report) -> String {
    let mut out = serde_json::to_string_pretty(report).unwrap_or_else(|e| {
        format!("{{\"schema_version\":1,\"error\":\"cannot serialise report: {e}\"}}")
    });
    out.push('\n');
    out
}

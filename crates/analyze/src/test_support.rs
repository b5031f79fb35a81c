//! Findings built by hand for the unit tests of the correlation steps.

use coroner_model::{Category, Finding, Location, Role, Severity};

/// A finding of `rule` first seen at `line` of input `log`, with nothing
/// else known.
pub(crate) fn finding(
    rule: &str,
    category: Category,
    severity: Severity,
    role: Role,
    line: u64,
) -> Finding {
    Finding {
        rule: rule.to_owned(),
        category,
        severity,
        role,
        title: String::new(),
        message: format!("{rule} happened"),
        count: 1,
        first_seen: Location {
            input: "log".to_owned(),
            line,
            byte_offset: 0,
            time: None,
        },
        evidence: Vec::new(),
        captures: Default::default(),
        rank: None,
        host: None,
        gpu: None,
        action: None,
        ranks: Vec::new(),
        remediation: Default::default(),
        references: Default::default(),
        explained_by: None,
        traceback: None,
        curve: None,
        printed_by: None,
    }
}

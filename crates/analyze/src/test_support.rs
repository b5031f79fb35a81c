//! Findings built by hand for the unit tests of the correlation steps,
//! and text scanned with the built-in rules.

use crate::findings::FindingTable;
use crate::scan::scan_text;
use coroner_ingest::{Input, InputSource};
use coroner_model::{Category, Finding, InputKind, InputSummary, Location, Role, Severity};
use coroner_rules::{RuleSet, RuleSources};

/// The built-in rules.
pub(crate) fn builtin_rules() -> RuleSet {
    RuleSet::load(&RuleSources {
        builtin: true,
        ..RuleSources::default()
    })
    .unwrap_or_else(|e| panic!("{e:?}"))
}

/// The finding table and the summary of `text` scanned as one log.
pub(crate) fn scanned(text: &[u8], rules: &RuleSet) -> (FindingTable, InputSummary) {
    let input = Input {
        display: "log".to_owned(),
        source: InputSource::Stdin,
        rank: None,
        explicit: true,
        loadable_elf: None,
    };
    let mut table = FindingTable::for_input(0);
    let mut summary = InputSummary::new("log", InputKind::Log);
    scan_text(
        &input,
        InputKind::Log,
        text,
        rules,
        &mut table,
        &mut summary,
    );
    (table, summary)
}

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
            own_time: None,
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

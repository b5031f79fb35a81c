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

/// The input [`scanned`] reads: standard input, shown as `log`.
pub(crate) fn log_input() -> Input {
    Input {
        display: "log".to_owned(),
        source: InputSource::Stdin,
        rank: None,
        explicit: true,
        loadable_elf: None,
    }
}

/// The finding table and the summary of `text` scanned as one log.
pub(crate) fn scanned(text: impl std::io::Read, rules: &RuleSet) -> (FindingTable, InputSummary) {
    let mut table = FindingTable::for_input(0);
    let mut summary = InputSummary::new("log", InputKind::Log);
    scan_text(
        &log_input(),
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

/// A deterministic stream of pseudo-random numbers (xorshift) from `seed`.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// A Python traceback of `frames` frames (two lines each) ending in a CUDA
/// illegal memory access.
pub(crate) fn deep_traceback(frames: usize) -> String {
    let mut text = String::from("Traceback (most recent call last):\n");
    for f in 0..frames {
        text.push_str(&format!(
            "  File \"/opt/train/deep.py\", line {f}, in call_{f}\n    return call_{}(x)\n",
            f + 1
        ));
    }
    text.push_str("RuntimeError: CUDA error: an illegal memory access was encountered\n");
    text
}

/// `count` exception lines, each under the frame that raised it and after a
/// step line, with no traceback header (a paste that kept only the last
/// frame): a cut placed after a frame's line falls just before its
/// exception line, whose rule captures the frame from the line above.
pub(crate) fn frames_without_header(count: usize) -> String {
    (0..count)
        .map(|n| {
            format!(
                "step {n} | loss 2.{n:04}\n  File \"/opt/train/step.py\", line {n}, in step_{n}\nValueError: bad shape {n}\n"
            )
        })
        .collect()
}

/// The lines shown before each finding's first evidence line, in the order
/// of the findings.
pub(crate) fn contexts_before(table: FindingTable, rules: &RuleSet) -> Vec<Vec<String>> {
    table
        .into_findings(rules)
        .into_iter()
        .map(|f| {
            f.evidence
                .first()
                .and_then(|e| e.context.clone())
                .map(|c| c.before)
                .unwrap_or_default()
        })
        .collect()
}

/// `count` training-step lines, numbered from 0: filler that no rule reads.
pub(crate) fn step_lines(count: usize) -> String {
    (0..count)
        .map(|n| format!("step {n} | loss 2.{n:04} | lr 3.0e-04\n"))
        .collect()
}

//! Running every rule's examples through the real pipeline.
//!
//! A firing example must produce a finding of its rule (with the expected
//! captures, rank and count where the example states them); a quiet
//! example must produce none. Examples run with the whole rule set loaded,
//! so `supersedes` and `fallback` act as they do on real logs.

use crate::findings::FindingTable;
use crate::scan::scan_text;
use coroner_ingest::{Input, InputSource};
use coroner_model::{Finding, InputKind, InputSummary};
use coroner_rules::{ExampleSpec, Rule, RuleSet};

/// The result of one example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExampleOutcome {
    /// The rule's id.
    pub rule: String,
    /// The rule file.
    pub source: String,
    /// 1-based position of the example in the file.
    pub number: usize,
    /// Whether the example should fire.
    pub fires: bool,
    /// What went wrong, if it failed.
    pub failure: Option<String>,
}

/// Runs the examples of the rules for which `select` returns true.
pub fn check_examples(
    set: &RuleSet,
    select: impl Fn(&coroner_rules::Rule) -> bool,
) -> Vec<ExampleOutcome> {
    let mut outcomes = Vec::new();
    for rule in set.rules().iter().filter(|r| select(r)) {
        for (k, example) in rule.examples.iter().enumerate() {
            outcomes.push(ExampleOutcome {
                rule: rule.id.clone(),
                source: rule.source.clone(),
                number: k + 1,
                fires: example.fires,
                failure: check(set, rule, example).err(),
            });
        }
    }
    outcomes
}

/// The findings of `text` scanned as one log with `set`.
pub fn findings_in_text(set: &RuleSet, text: &str) -> Vec<Finding> {
    findings_in(set, text, InputKind::Log)
}

/// The findings of `bytes` scanned as one log with `set`, as a file's
/// bytes are: any bytes, not only UTF-8.
pub fn findings_in_bytes(set: &RuleSet, bytes: &[u8]) -> Vec<Finding> {
    findings_in(set, bytes, InputKind::Log)
}

/// The findings of `text` scanned as one input of `kind` with `set`.
fn findings_in(set: &RuleSet, text: impl AsRef<[u8]>, kind: InputKind) -> Vec<Finding> {
    let input = Input {
        display: "example".to_owned(),
        source: InputSource::Stdin,
        rank: None,
        explicit: true,
        loadable_elf: None,
    };
    let mut summary = InputSummary::new(input.display.clone(), InputKind::Log);
    let mut table = FindingTable::for_input(0);
    scan_text(&input, kind, text.as_ref(), set, &mut table, &mut summary);
    crate::tail::keep_at_end(&mut table, set, std::slice::from_ref(&summary));
    let mut findings = table.into_findings(set);
    crate::cascade::drop_superseded(&mut findings, set);
    findings
}

fn check(set: &RuleSet, rule: &Rule, example: &ExampleSpec) -> Result<(), String> {
    let id = rule.id.as_str();
    let findings: Vec<Finding> = findings_in(set, &example.input, rule.example_kind())
        .into_iter()
        .filter(|f| f.rule == id)
        .collect();
    match (example.fires, findings.first()) {
        (false, None) => Ok(()),
        (false, Some(f)) => Err(format!(
            "should stay quiet but fired on line {}: {}",
            f.first_seen.line,
            f.evidence.first().map_or("", |e| e.text.as_str())
        )),
        (true, None) => Err("should fire but did not".to_owned()),
        (true, Some(f)) => {
            for (key, want) in &example.captures {
                match f.captures.get(key) {
                    Some(got) if got == want => {}
                    Some(got) => {
                        return Err(format!("capture `{key}`: expected {want:?}, got {got:?}"))
                    }
                    None => return Err(format!("capture `{key}`: expected {want:?}, got nothing")),
                }
            }
            if let Some(rank) = example.rank {
                if f.rank != Some(rank) {
                    return Err(format!("rank: expected {rank}, got {:?}", f.rank));
                }
            }
            if let Some(count) = example.count {
                let total: u64 = findings.iter().map(|f| f.count).sum();
                if total != count {
                    return Err(format!("count: expected {count}, got {total}"));
                }
            }
            Ok(())
        }
    }
}

//! Rules that read where a log stops: a `tail_lines` rule's finding is kept
//! only when its last line is among the last lines of its input that hold
//! text (the job hung at the step that line announces, and printed nothing
//! after it; blank lines at the end of a paste do not count).

use coroner_model::{Finding, InputSummary};
use coroner_rules::RuleSet;

/// Drops the findings of `tail_lines` rules whose last evidence line is not
/// near the end of its input.
pub(crate) fn keep_at_end(findings: &mut Vec<Finding>, rules: &RuleSet, inputs: &[InputSummary]) {
    findings.retain(|f| {
        let Some(tail) = rules.get(&f.rule).and_then(|r| r.tail_lines) else {
            return true;
        };
        let input = &f.first_seen.input;
        let Some((lines, step)) = inputs
            .iter()
            .find(|i| &i.path == input)
            .map(|i| (i.last_text_line, if i.double_spaced { 2 } else { 1 }))
        else {
            return true;
        };
        let last = f
            .evidence
            .iter()
            .filter(|e| &e.input == input)
            .map(|e| e.line)
            .max()
            .unwrap_or(f.first_seen.line);
        last.saturating_add(tail.saturating_mul(step)) > lines
    });
}

//! Rules that read where a log stops: a `tail_lines` rule's finding is kept
//! only when its last line is among the last lines of its input that hold
//! text (the job hung at the step that line announces, and printed nothing
//! after it; blank lines at the end of a paste do not count).

use crate::findings::FindingTable;
use coroner_model::InputSummary;
use coroner_rules::RuleSet;

/// Drops the findings of `tail_lines` rules whose last match is not near
/// the end of its input. The last match, not the last evidence line: a
/// finding keeps the first few of its lines as evidence, and eight ranks
/// that each stop at the same line are one finding.
pub(crate) fn keep_at_end(table: &mut FindingTable, rules: &RuleSet, inputs: &[InputSummary]) {
    table.retain(|rule, input, last| {
        let Some(tail) = rules.rules().get(rule).and_then(|r| r.tail_lines) else {
            return true;
        };
        let Some((lines, step)) = inputs
            .iter()
            .find(|i| i.path == input)
            .map(|i| (i.last_text_line, if i.double_spaced { 2 } else { 1 }))
        else {
            return true;
        };
        last.saturating_add(tail.saturating_mul(step)) > lines
    });
}

#[cfg(test)]
mod tests {
    use crate::examples::findings_in_text;
    use crate::test_support::builtin_rules;

    const ROOT: &str =
        "Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n";
    const LOADING: &str = "Loading extension module fused_adam...\n";

    fn stalled(text: &str) -> bool {
        findings_in_text(&builtin_rules(), text)
            .iter()
            .any(|f| f.rule == "torch-extension-load-stalled")
    }

    /// Eight ranks without prefixes that all stop at the same step are one
    /// finding whose evidence keeps only its first lines: it is still the
    /// log's end.
    #[test]
    fn the_last_of_many_matches_is_where_a_finding_ends() {
        let text = format!("{}{}", ROOT.repeat(8), LOADING.repeat(8));
        assert!(stalled(&text));
        // One rank that went on to train is not a stall.
        let text =
            format!("{text}step 1 loss 2.1\nstep 2 loss 2.0\nstep 3 loss 1.9\nstep 4 loss 1.8\n");
        assert!(!stalled(&text));
    }
}

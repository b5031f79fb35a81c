//! Trends in a text input's training metrics, read by the rules.
//!
//! The metric collector ([`coroner_metrics`]) turns the metric lines of a
//! log into per-rank series and finds trends in them, each as one sentence
//! (`trend: memory allocated grows 16.0 MiB per step over 417 steps ...`).
//! As with core dumps, rules limited to the `metric-trends` kind match those
//! sentences, so what a trend means stays in `rules/`. The findings point at
//! the log line where the trend is decided, carry the rank and the curve of
//! the metric, and their evidence is the log's own lines (the first and
//! last metric lines, the first non-finite value), never the sentence.

use crate::findings::FindingTable;
use crate::scan::scan_text;
use coroner_ingest::Input;
use coroner_metrics::{MetricCollector, Trend};
use coroner_model::{inert_capped, Evidence, InputKind, InputSummary};
use coroner_rules::RuleSet;
use std::fmt::Write;

/// Scans the trends of `metrics` (collected from `input`) with the rules
/// and adds what they find to `table`.
pub(crate) fn scan_trends(
    input: &Input,
    metrics: &MetricCollector,
    rules: &RuleSet,
    table: &mut FindingTable,
) {
    let trends = metrics.trends();
    if trends.is_empty() {
        return;
    }
    let mut own = FindingTable::for_input_remapped(table.input());
    let mut summary = InputSummary::new(input.display.clone(), InputKind::MetricTrends);
    scan_text(
        input,
        InputKind::MetricTrends,
        text(&trends).as_bytes(),
        rules,
        &mut own,
        &mut summary,
    );
    // Line k of the trend text stands for trend k: decided at its line,
    // shown by its evidence lines.
    let trend = |k: u64| {
        usize::try_from(k.saturating_sub(1))
            .ok()
            .and_then(|i| trends.get(i))
    };
    own.stand_for(
        |k| trend(k).map_or(k, |t| t.line),
        |k| {
            trend(k)
                .map(|t| evidence(&input.display, t))
                .unwrap_or_default()
        },
        |k| trend(k).and_then(|t| t.curve.clone()),
    );
    table.merge(own);
}

/// The log lines that show trend `t`, as evidence from `input`.
fn evidence(input: &str, t: &Trend) -> Vec<Evidence> {
    t.evidence
        .iter()
        .map(|kept| Evidence {
            input: input.to_owned(),
            line: kept.line,
            text: inert_capped(&kept.text, crate::findings::MAX_EVIDENCE_CHARS),
            context: None,
        })
        .collect()
}

/// One line per trend, with the launcher's rank prefix when the rank is
/// known, so that the findings carry it.
fn text(trends: &[Trend]) -> String {
    let mut out = String::new();
    for t in trends {
        if let Some(rank) = t.rank {
            let _ = write!(out, "[rank{rank}]: ");
        }
        out.push_str(&t.text);
        out.push('\n');
    }
    out
}

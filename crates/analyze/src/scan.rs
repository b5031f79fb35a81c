//! Scanning one text input line by line.

use crate::findings::{cap_chars, EvidenceSlot, FindingTable, MAX_EVIDENCE_CHARS};
use coroner_ingest::{clean_line, LineReader, MAX_LINE};
use coroner_logs::strip_rank_prefix;
use coroner_model::{Context, InputError, InputSummary};
use coroner_rules::{Line, RuleSet, Scanner};
use std::collections::VecDeque;
use std::io::BufRead;

/// Lines of context shown before and after an evidence line.
const CONTEXT_LINES: usize = 2;
/// Recent lines remembered for context (covers rule windows).
const RECENT_LINES: usize = 32;

/// The last few lines, for the context of evidence found later.
#[derive(Debug, Default)]
struct Recent {
    lines: VecDeque<(u64, String)>,
}

impl Recent {
    fn push(&mut self, number: u64, text: &str) {
        let mut slot = if self.lines.len() >= RECENT_LINES {
            self.lines.pop_front().map(|(_, s)| s).unwrap_or_default()
        } else {
            String::new()
        };
        slot.clear();
        slot.push_str(text);
        self.lines.push_back((number, slot));
    }

    fn context(&self, number: u64) -> Context {
        let pick = |range: std::ops::RangeInclusive<u64>| -> Vec<String> {
            self.lines
                .iter()
                .filter(|(n, _)| range.contains(n))
                .map(|(_, t)| cap_chars(t, MAX_EVIDENCE_CHARS))
                .collect()
        };
        let ctx = CONTEXT_LINES as u64;
        Context {
            before: pick(number.saturating_sub(ctx).max(1)..=number.saturating_sub(1)),
            after: pick(number + 1..=number + ctx),
            span: None,
        }
    }
}

/// Scans the lines of one text input into `table`, filling `summary`'s
/// byte and line counts and recording a read error with its offset.
pub(crate) fn scan_text(
    input: &coroner_ingest::Input,
    reader: impl BufRead,
    rules: &RuleSet,
    table: &mut FindingTable,
    summary: &mut InputSummary,
) {
    table.next_input();
    let mut lines = LineReader::new(reader);
    let mut scanner = Scanner::new(rules);
    let mut cleaned = Vec::new();
    let mut matches = Vec::new();
    let mut recent = Recent::default();
    let mut open_after: Vec<EvidenceSlot> = Vec::new();
    let mut truncated = 0u64;
    loop {
        let raw = match lines.next_line() {
            Ok(Some(raw)) => raw,
            Ok(None) => break,
            Err(e) => {
                summary.errors.push(InputError {
                    message: format!("read failed: {e}; the input was analysed up to here"),
                    offset: Some(lines.offset()),
                });
                break;
            }
        };
        if raw.truncated {
            truncated += 1;
        }
        let (number, offset) = (raw.number, raw.offset);
        let text = String::from_utf8_lossy(clean_line(raw.bytes, &mut cleaned));
        open_after.retain(|&slot| table.add_after(slot, &text, CONTEXT_LINES));
        recent.push(number, &text);
        let prefixed = strip_rank_prefix(&text);
        if scanner.is_quiet(prefixed.rest) {
            continue;
        }
        let line = Line {
            number,
            offset,
            text: prefixed.rest,
            shown: &text,
            rank: prefixed.rank,
        };
        scanner.feed(&line, &mut matches);
        for m in matches.drain(..) {
            let anchor_line = m.lines.first().map_or(number, |l| l.number);
            let slot = table.record(m, &input.display, input.rank, |n| recent.context(n));
            if let Some(slot) = slot {
                if anchor_line == number {
                    open_after.push(slot);
                }
            }
        }
    }
    scanner.finish();
    summary.bytes = lines.offset();
    summary.lines = lines.lines();
    if truncated > 0 {
        summary.notes.push(format!(
            "{truncated} line(s) longer than {} MiB were truncated for matching",
            MAX_LINE >> 20
        ));
    }
}

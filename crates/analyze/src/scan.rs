//! Scanning one text input.
//!
//! The fast path: the input is read in blocks of whole lines, and one
//! search over the block and its lowercased copy
//! ([`Scanner::next_literal`]) jumps to the next line that holds a
//! rule's literal. The lines in between are
//! only counted (a SIMD newline count), never copied, decoded or matched.
//! A line is handled one at a time (cleaned of CR and colour codes,
//! decoded, stripped of its rank prefix, fed to the rules) when it holds a
//! literal, while a rule's window is open, while evidence still wants the
//! lines after it, while a Python traceback is being read, and in blocks
//! holding ANSI escapes (which can split a literal).

use crate::code_lines::{is_python_code, is_rich_frame_source};
use crate::findings::{EvidenceSlot, FindingTable, MAX_EVIDENCE_CHARS};
use crate::pasted::{
    continues_line, dedent, shared_indent, unwrapped, unwrapped_end, wrap_width, Indent,
};
use crate::spacing::{double_spaced, Spacing, SPACED_BYTES};
use coroner_ingest::{clean_line, has_web_text, lossy, Block, BlockReader, MAX_LINE};
use coroner_logs::{
    continues_message, embedded_message, spawned_process, strip_rank_prefix, Prefixed,
    RankedTraceback, StackDumpReader, TracebackReader,
};
use coroner_metrics::MetricCollector;
use coroner_model::{
    inert_capped, Category, Context, Finding, InputError, InputKind, InputSummary,
};
use coroner_rules::{is_hard_wrapped, Line, Match, Rule, RuleSet, Scanner};
use std::collections::VecDeque;
use std::io::Read;

/// Lines of context shown before and after an evidence line.
const CONTEXT_LINES: usize = 2;
/// Recent lines remembered for context (covers rule windows).
const RECENT_LINES: usize = 32;
/// Lines before a handled line remembered for it: enough for its context
/// and for rules that look back past a traceback's caret line.
pub(crate) const LINES_BEFORE: usize = if CONTEXT_LINES > Rule::LOOK_BACK + 1 {
    CONTEXT_LINES
} else {
    Rule::LOOK_BACK + 1
};
/// Bytes before a part that its lead lines are taken from at most.
pub(crate) const LEAD_MAX: usize = 64 << 10;
/// A block of lines up to this size offers every line to the metric
/// collector...
const METRIC_ALL_LINES_BELOW: usize = 64 << 10;
/// ... a larger one this many lines, evenly spaced through it: enough for
/// trends, at a small fraction of the cost of parsing every metric line of a
/// multi-GB log or of hundreds of rank files.
const METRIC_SAMPLES_PER_BLOCK: usize = 64;
/// Lines of any block offered when an input is one of very many: enough
/// for every trend's minimum number of samples...
const SPARSE_METRIC_SAMPLES_PER_BLOCK: usize = 32;
/// ... and at most one line in this many bytes: a per-rank log of a few
/// kilobytes among thousands is offered a few lines, not a third of them.
const SPARSE_METRIC_SPACING: usize = 1 << 10;

/// How densely a part's lines are offered to the metric collector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MetricSampling {
    /// Not at all: text coroner wrote, or a rule example.
    Off,
    /// Every line of a small block, [`METRIC_SAMPLES_PER_BLOCK`] of a
    /// large one.
    Dense,
    /// [`SPARSE_METRIC_SAMPLES_PER_BLOCK`] lines of every block: for one
    /// input among thousands (a directory of per-rank files), where parsing
    /// every metric line of each would cost more than the rest of the scan.
    Sparse,
}

/// The last lines handled, for the context of evidence found later.
#[derive(Debug, Default)]
struct Recent {
    lines: VecDeque<(u64, String)>,
    /// The lines just before the part, nearest first: a part cut from a
    /// larger input looks back to them from its first lines.
    lead: Vec<String>,
}

impl Recent {
    fn push(&mut self, number: u64, text: &str) {
        if self.lines.back().is_some_and(|(n, _)| *n >= number) {
            return;
        }
        let mut slot = if self.lines.len() >= RECENT_LINES {
            self.lines.pop_front().map(|(_, s)| s).unwrap_or_default()
        } else {
            String::new()
        };
        slot.clear();
        slot.push_str(text);
        self.lines.push_back((number, slot));
    }

    /// The text of line `number`, when it is remembered.
    fn get(&self, number: u64) -> Option<&str> {
        self.lines
            .iter()
            .rev()
            .find(|(n, _)| *n == number)
            .map(|(_, t)| t.as_str())
    }

    /// The text of the line `back` lines before line `number`, when it is
    /// remembered: one of the part's, or one of the lines before it.
    fn before(&self, number: u64, back: u64) -> Option<&str> {
        match number.checked_sub(back) {
            Some(n) if n > 0 => self.get(n),
            _ => self
                .lead
                .get(usize::try_from(back - number).ok()?)
                .map(String::as_str),
        }
    }

    fn context(&self, number: u64) -> Context {
        let ctx = CONTEXT_LINES as u64;
        let after = number + 1..=number + ctx;
        Context {
            before: (1..=ctx)
                .rev()
                .filter_map(|back| self.before(number, back))
                .map(|t| inert_capped(t, MAX_EVIDENCE_CHARS))
                .collect(),
            after: self
                .lines
                .iter()
                .filter(|(n, _)| after.contains(n))
                .map(|(_, t)| inert_capped(t, MAX_EVIDENCE_CHARS))
                .collect(),
            span: None,
        }
    }
}

/// The state of one input's scan.
struct TextScan<'a> {
    rules: &'a RuleSet,
    on_finding: OnFinding<'a>,
    input: &'a str,
    input_rank: Option<u32>,
    scanner: Scanner<'a>,
    table: &'a mut FindingTable,
    recent: Recent,
    open_after: Vec<EvidenceSlot>,
    cleaned: Vec<u8>,
    lowered: Vec<u8>,
    matches: Vec<Match>,
    line: u64,
    /// The last line with text (see [`InputSummary::last_text_line`]).
    text_line: u64,
    truncated: u64,
    /// `None` when the part's metrics are not wanted.
    metrics: Option<MetricCollector>,
    metric_sampling: MetricSampling,
    tracebacks: TracebackReader,
    read_tracebacks: Vec<RankedTraceback>,
    stacks: StackDumpReader,
    read_stacks: Vec<coroner_logs::StackDump>,
    desyncs: coroner_logs::DesyncReader,
    read_desyncs: Vec<coroner_logs::DesyncSnapshot>,
    stalls: coroner_logs::StallReader,
    read_stalls: Vec<coroner_logs::StallReport>,
    /// The `mp.spawn` child whose traceback is being printed, if any.
    spawned: Option<Spawned>,
    /// The last line handled, when it held a rule's literal: the next
    /// line may be the rest of its message.
    joinable: Joinable,
    /// The indentation every line of the input shares, removed from each:
    /// a log pasted as an indented block (Markdown's indented code, a
    /// list item, an email quote) reads as the log. Decided on the first
    /// block of an input read whole from its start; `None` until then.
    indent: Option<Indent>,
    /// The width at which a terminal or a paste cut the input's lines,
    /// decided with `indent`: the lines it cut are read put back together.
    wrap: Option<usize>,
    /// Set, with `indent`, for a double-spaced paste: its added blank
    /// lines are left out, and `line` counts the lines read.
    spacing: Option<Spacing>,
}

/// The lines of a message kept to be matched joined with the next: a
/// line that held a rule's literal and the lines that continued it. Its
/// buffers are reused from line to line.
#[derive(Debug, Default)]
struct Joinable {
    /// How many lines are kept (the first `held` of `lines`).
    held: usize,
    lines: Vec<HeldLine>,
}

#[derive(Debug, Default)]
struct HeldLine {
    number: u64,
    offset: u64,
    /// The text rules match (prefix removed).
    text: String,
    /// The whole line as shown.
    shown: String,
    rank: Option<u32>,
}

/// Bytes of a hard-wrapped input read with its cut lines put back
/// together: a paste is far shorter.
const UNWRAPPED_BYTES: u64 = 16 << 20;

/// Lines of one message matched joined at most.
const MAX_JOINED_LINES: usize = 6;
/// Lines after `-- Process N terminated with the following error:` that
/// may still be process N's traceback.
const SPAWNED_LINES: u64 = 256;

/// The child of `mp.spawn` whose traceback the parent is printing: its
/// process index, and the line of the header that named it.
#[derive(Debug, Clone, Copy)]
struct Spawned {
    index: u32,
    from: u64,
}

impl Joinable {
    fn is_held(&self) -> bool {
        self.held > 0
    }

    /// Whether `line`, the next line of the input, continues the kept
    /// message: then the rank it belongs to (a line without a rank prefix
    /// that continues a ranked line broken by a hard wrap is that rank's).
    fn continued_by(&self, line: &Line<'_>) -> Option<Option<u32>> {
        let last = self.held.checked_sub(1).and_then(|i| self.lines.get(i))?;
        let same_rank =
            last.rank == line.rank || (line.rank.is_none() && is_hard_wrapped(&last.shown));
        (last.number + 1 == line.number && same_rank && continues_line(&last.shown, line))
            .then_some(last.rank)
    }

    /// Keeps `line` after the lines kept, or alone with `restart`.
    fn keep(&mut self, line: &Line<'_>, restart: bool) {
        if restart || self.held >= MAX_JOINED_LINES {
            self.held = 0;
        }
        if self.lines.len() <= self.held {
            self.lines.push(HeldLine::default());
        }
        let Some(kept) = self.lines.get_mut(self.held) else {
            return;
        };
        kept.number = line.number;
        kept.offset = line.offset;
        kept.rank = line.rank;
        kept.text.clear();
        kept.text.push_str(line.text);
        kept.shown.clear();
        kept.shown.push_str(line.shown);
        self.held += 1;
    }

    /// The kept lines, as the matcher takes them.
    fn run(&self) -> Vec<Line<'_>> {
        self.lines
            .iter()
            .take(self.held)
            .map(|l| Line {
                number: l.number,
                offset: l.offset,
                text: &l.text,
                shown: &l.shown,
                rank: l.rank,
            })
            .collect()
    }
}

/// Scans one text input into `table`, filling `summary`'s byte and line
/// counts and recording a read error with its offset.
pub(crate) fn scan_text(
    input: &coroner_ingest::Input,
    kind: InputKind,
    reader: impl Read,
    rules: &RuleSet,
    table: &mut FindingTable,
    summary: &mut InputSummary,
) {
    let part = Part {
        reader,
        offset: 0,
        after: None::<&[u8]>,
        live: false,
        metrics: MetricSampling::Off,
        lead: Vec::new(),
    };
    scan_part(input, kind, part, rules, table, summary, None);
}

/// A run of lines of an input: where it starts, and what follows it.
pub(crate) struct Part<R, A> {
    /// The lines.
    pub reader: R,
    /// Byte offset of the first line in the input.
    pub offset: u64,
    /// The input after the part, read only as far as needed to complete
    /// rule windows and evidence context open at the part's end.
    pub after: Option<A>,
    /// Hand lines to the rules as soon as they arrive (following a growing
    /// input) rather than a full buffer at a time.
    pub live: bool,
    /// How to sample training-metric lines for trends (off for text
    /// coroner wrote or a rule example).
    pub metrics: MetricSampling,
    /// The lines just before the part (see [`lead_of`]; empty at the
    /// input's start), which its first lines look back to.
    pub lead: Vec<u8>,
}

/// The lines at the end of `before`, the text just before a part, that the
/// part's first lines look back to: the last few whole lines within its
/// last [`LEAD_MAX`] bytes. `starts_line` tells whether `before` starts at
/// the start of a line.
pub(crate) fn lead_of(before: &[u8], starts_line: bool) -> Vec<u8> {
    if before.is_empty() {
        return Vec::new();
    }
    let from = before.len().saturating_sub(LEAD_MAX);
    let window = &before[from..];
    let mut end = window.len() - usize::from(window.last() == Some(&b'\n'));
    let mut first = window.len();
    for _ in 0..LINES_BEFORE {
        match memchr::memrchr(b'\n', &window[..end]) {
            Some(newline) => {
                first = newline + 1;
                end = newline;
            }
            None => {
                if from == 0 && starts_line {
                    first = 0;
                }
                break;
            }
        }
    }
    window[first..].to_vec()
}

/// Called with each new finding when it is first seen.
pub(crate) type OnFinding<'a> = Option<&'a (dyn Fn(&Finding) + Sync)>;

/// Lines read past the end of a part at most, to complete open windows.
pub(crate) const AFTER_PART_LINES: usize = 256;

/// Scans one part of a text input; line numbers count from the part's
/// start. Returns the training metrics sampled from its lines, and whether
/// a traceback, a stack dump, a desync report or a joined line was still
/// open at the part's end (a reading that only the lines after it can
/// complete, so the part cannot be scanned apart from the next one).
pub(crate) fn scan_part(
    input: &coroner_ingest::Input,
    kind: InputKind,
    part: Part<impl Read, impl Read>,
    rules: &RuleSet,
    table: &mut FindingTable,
    summary: &mut InputSummary,
    on_finding: OnFinding<'_>,
) -> (MetricCollector, bool) {
    let mut blocks = if part.live {
        BlockReader::live(part.reader)
    } else {
        BlockReader::new(part.reader)
    };
    let mut scan = TextScan {
        rules,
        on_finding,
        input: &input.display,
        input_rank: input.rank,
        scanner: Scanner::new(rules, kind),
        table,
        recent: Recent::default(),
        open_after: Vec::new(),
        cleaned: Vec::new(),
        lowered: Vec::new(),
        matches: Vec::new(),
        line: 0,
        text_line: 0,
        truncated: 0,
        metrics: (part.metrics != MetricSampling::Off).then(MetricCollector::new),
        metric_sampling: part.metrics,
        tracebacks: TracebackReader::new(),
        read_tracebacks: Vec::new(),
        stacks: StackDumpReader::new(),
        read_stacks: Vec::new(),
        desyncs: coroner_logs::DesyncReader::new(),
        read_desyncs: Vec::new(),
        stalls: coroner_logs::StallReader::new(),
        read_stalls: Vec::new(),
        spawned: None,
        joinable: Joinable::default(),
        // A part cut from a larger file, or a growing input, keeps its
        // lines as they are: what is found never depends on the cuts.
        indent: (part.offset != 0 || part.live || part.after.is_some()).then(Indent::default),
        wrap: None,
        spacing: None,
    };
    scan.remember_lead(&part.lead);
    loop {
        match blocks.next_block() {
            Ok(None) => break,
            Ok(Some(Block::Lines { bytes, offset })) => scan.block(bytes, part.offset + offset),
            Ok(Some(Block::LongLine { head, offset })) => {
                scan.handle_line(head, part.offset + offset, true);
            }
            Err(e) => {
                summary.errors.push(InputError {
                    message: format!("read failed: {e}; the input was analysed up to here"),
                    offset: Some(part.offset + blocks.offset()),
                });
                break;
            }
        }
    }
    summary.bytes = blocks.offset();
    summary.lines = scan.input_lines();
    summary.last_text_line = scan.input_line(scan.text_line);
    if scan.spacing.is_some() {
        summary.double_spaced = true;
        summary.notes.push(
            "read as a double-spaced paste: the blank line after each line was left out".to_owned(),
        );
    }
    let open_at_end = scan.tracebacks.is_open()
        || scan.stacks.is_open()
        || scan.desyncs.is_open()
        || scan.stalls.is_open();
    if let Some(after) = part.after {
        scan.finish_open(after, part.offset + blocks.offset());
    }
    scan.scanner.finish();
    scan.tracebacks.finish(&mut scan.read_tracebacks);
    if scan.tracebacks.closed_early() > 0 {
        summary.notes.push(format!(
            "{} Python traceback(s) were closed before their end: more than {} were open at once",
            scan.tracebacks.closed_early(),
            coroner_logs::MAX_OPEN_TRACEBACKS
        ));
    }
    scan.stacks.finish(&mut scan.read_stacks);
    scan.desyncs.finish(&mut scan.read_desyncs);
    scan.stalls.finish(&mut scan.read_stalls);
    scan.renumber_reads();
    let interrupted = scan
        .read_tracebacks
        .iter()
        .filter_map(coroner_logs::StackDump::from_interrupt);
    scan.read_stacks.extend(interrupted);
    let dumps = std::mem::take(&mut scan.read_stacks);
    scan.table.add_stack_dumps(&input.display, dumps);
    let desyncs = std::mem::take(&mut scan.read_desyncs);
    scan.table.add_desyncs(&input.display, desyncs);
    let stalls = std::mem::take(&mut scan.read_stalls);
    scan.table.add_stall_reports(&input.display, stalls);
    let tracebacks: Vec<_> = scan
        .read_tracebacks
        .drain(..)
        .map(|t| t.traceback)
        .collect();
    scan.table.attach_tracebacks(&tracebacks);
    if scan.truncated > 0 {
        summary.notes.push(format!(
            "{} line(s) longer than {} MiB were truncated for matching",
            scan.truncated,
            MAX_LINE >> 20
        ));
    }
    (scan.metrics.unwrap_or_default(), open_at_end)
}

impl TextScan<'_> {
    /// The input's number of the line read as `line` (they differ in a
    /// double-spaced paste).
    fn input_line(&self, line: u64) -> u64 {
        self.spacing.as_ref().map_or(line, |s| s.input_line(line))
    }

    /// The input's lines passed so far: those read, and the blank lines a
    /// double-spaced paste added.
    fn input_lines(&self) -> u64 {
        self.line + self.spacing.as_ref().map_or(0, Spacing::left_out)
    }

    /// Numbers what the readers read back to the input's lines.
    fn renumber_reads(&mut self) {
        let Some(spacing) = &self.spacing else {
            return;
        };
        for t in &mut self.read_tracebacks {
            spacing.renumber_traceback(&mut t.traceback);
        }
        for d in &mut self.read_stacks {
            spacing.renumber_stack_dump(d);
        }
        for d in &mut self.read_desyncs {
            spacing.renumber_desync(d);
        }
        for r in &mut self.read_stalls {
            spacing.renumber_stall(r);
        }
    }

    /// Tells the caller about a finding seen for the first time (`slot`
    /// is its first evidence).
    fn announce(&self, slot: Option<EvidenceSlot>) {
        let (Some(notify), Some((at, 0))) = (self.on_finding, slot) else {
            return;
        };
        if let Some(finding) = self.table.snapshot(at, self.rules) {
            notify(&finding);
        }
    }

    /// Whether every line must be looked at: a rule window or an evidence
    /// context is open.
    fn waiting(&self) -> bool {
        self.scanner.has_pending()
            || !self.open_after.is_empty()
            || self.tracebacks.is_open()
            || self.stacks.is_open()
            || self.desyncs.is_open()
            || self.stalls.is_open()
            || self.joinable.is_held()
    }

    /// Feeds the lines after a part to the windows and evidence contexts
    /// still open at its end, without starting new matches.
    fn finish_open(&mut self, after: impl Read, offset: u64) {
        let mut blocks = BlockReader::with_capacity(after, 64 * 1024);
        let mut offset = offset;
        let mut fed = 0;
        while fed < AFTER_PART_LINES && self.waiting() {
            let Ok(Some(Block::Lines { bytes, .. })) = blocks.next_block() else {
                break;
            };
            for raw in bytes.split_inclusive(|&b| b == b'\n') {
                if fed >= AFTER_PART_LINES || !self.waiting() {
                    break;
                }
                fed += 1;
                let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
                self.match_line(self.line + fed as u64, offset, raw, Feed::OpenWindows);
                offset += raw.len() as u64 + 1;
            }
        }
    }

    /// Offers lines of a block to the metric collector: all of them in a
    /// small block, [`METRIC_SAMPLES_PER_BLOCK`] evenly spaced ones in a
    /// large one (their numbers counted with one SIMD newline count).
    fn sample_metrics(&mut self, bytes: &[u8]) {
        if self.metrics.is_none() {
            return;
        }
        let step = match self.metric_sampling {
            MetricSampling::Sparse => {
                (bytes.len() / SPARSE_METRIC_SAMPLES_PER_BLOCK).max(SPARSE_METRIC_SPACING)
            }
            _ if bytes.len() < METRIC_ALL_LINES_BELOW => 1,
            _ => bytes.len() / METRIC_SAMPLES_PER_BLOCK,
        };
        let mut pos = 0;
        // The lines are counted as the input has them.
        let mut number = self.input_lines() + 1;
        while pos < bytes.len() {
            let end = line_end(bytes, pos);
            self.offer_metric_line(&bytes[pos..end], number);
            // The first line starting at or after `pos + step`.
            let target = (pos + step).max(end + 1);
            let next = if target >= bytes.len() {
                bytes.len()
            } else {
                memchr::memrchr(b'\n', &bytes[end..target]).map_or(end + 1, |i| end + i + 1)
            };
            let next = if next <= pos { end + 1 } else { next };
            number += bytecount::count(&bytes[pos..next.min(bytes.len())], b'\n') as u64;
            pos = next;
        }
    }

    fn offer_metric_line(&mut self, raw: &[u8], number: u64) {
        let raw = &raw[..raw.len().min(MAX_LINE)];
        if !self.metrics.as_ref().is_some_and(|m| m.may_read(raw)) {
            return;
        }
        let Ok(text) = std::str::from_utf8(clean_line(raw, &mut self.cleaned)) else {
            return;
        };
        let prefixed = strip_rank_prefix(text);
        let Some(metrics) = &mut self.metrics else {
            return;
        };
        metrics.line(
            prefixed.rest.as_bytes(),
            number,
            prefixed.rank.or(self.input_rank),
        );
    }

    /// Scans a block of whole lines starting at input offset `offset`.
    fn block(&mut self, bytes: &[u8], offset: u64) {
        if self.indent.is_none() {
            let indent = shared_indent(bytes);
            self.indent = Some(indent);
            self.spacing = double_spaced(bytes).then(Spacing::default);
            if self.spacing.is_none() {
                self.wrap = wrap_width(bytes, indent.outer);
            }
        }
        self.sample_metrics(bytes);
        if self.spacing.is_some() && offset < SPACED_BYTES {
            self.spaced_block(bytes, offset);
            return;
        }
        if let Some(width) = self.wrap.filter(|_| offset < UNWRAPPED_BYTES) {
            self.unwrapped_block(bytes, offset, width);
            return;
        }
        // Colour codes or a web page's character references can stand
        // inside a rule's literal: then every line is cleaned first.
        let escapes = memchr::memchr(0x1b, bytes).is_some() || has_web_text(bytes);
        if !escapes {
            self.lowered.clear();
            self.lowered
                .extend(bytes.iter().map(u8::to_ascii_lowercase));
        }
        // The next fingerprint of each kind at or after `pos`, found once
        // and reused until passed, so that each search crosses the block
        // once.
        let mut next = Candidates::default();
        let mut pos = 0;
        while pos < bytes.len() {
            if escapes || self.waiting() {
                let end = line_end(bytes, pos);
                self.handle_line(&bytes[pos..end], offset + pos as u64, false);
                pos = end + 1;
                continue;
            }
            let Some(at) = next.at_or_after(pos, &self.scanner, bytes, &self.lowered) else {
                self.skip(&bytes[pos..]);
                self.remember_before(bytes, bytes.len());
                return;
            };
            let start = memchr::memrchr(b'\n', &bytes[pos..at]).map_or(pos, |i| pos + i + 1);
            let end = line_end(bytes, at);
            self.skip(&bytes[pos..start]);
            self.remember_before(bytes, start);
            self.handle_line(&bytes[start..end], offset + start as u64, false);
            pos = end + 1;
        }
    }

    /// Scans a block of an input hard-wrapped at `width`, every line
    /// looked at: a line the wrap cut is handled whole, numbered as its
    /// first part.
    fn unwrapped_block(&mut self, bytes: &[u8], offset: u64, width: usize) {
        let outer = self.indent.unwrap_or_default().outer;
        let mut pos = 0;
        while pos < bytes.len() {
            let (end, lines) = unwrapped_end(bytes, pos, width, outer);
            let raw = &bytes[pos..end];
            if lines > 1 {
                self.handle_line(&unwrapped(raw, outer), offset + pos as u64, false);
            } else {
                self.handle_line(raw, offset + pos as u64, false);
            }
            self.line += lines - 1;
            pos = end + 1;
        }
    }

    /// Scans a block of a double-spaced paste, every line looked at: the
    /// blank lines the paste added are left out.
    fn spaced_block(&mut self, bytes: &[u8], offset: u64) {
        let mut pos = 0;
        while pos < bytes.len() {
            let end = line_end(bytes, pos);
            let raw = &bytes[pos..end];
            let blank = clean_line(raw, &mut self.cleaned).trim_ascii().is_empty();
            let next = self.line + 1;
            let read = match &mut self.spacing {
                Some(spacing) if blank => !spacing.blank(next),
                Some(spacing) => {
                    spacing.text();
                    true
                }
                None => true,
            };
            if read {
                self.handle_line(raw, offset + pos as u64, false);
            }
            pos = end + 1;
        }
    }

    /// Counts the lines of `region` (whole lines) without looking at them.
    fn skip(&mut self, region: &[u8]) {
        if region.is_empty() {
            return;
        }
        let newlines = bytecount::count(region, b'\n') as u64;
        let unterminated = u64::from(region.last() != Some(&b'\n'));
        if let Some(at) = last_text_line_start(region, &mut self.cleaned) {
            let after = bytecount::count(&region[at..], b'\n') as u64;
            self.text_line = self.line + 1 + newlines - after;
        }
        self.line += newlines + unterminated;
    }

    /// Remembers, for context and for rules' `before` patterns, the lines of `bytes` just before offset `at`
    /// (the start of a line, or the end of the block); the last of them is
    /// line [`TextScan::line`].
    fn remember_before(&mut self, bytes: &[u8], at: usize) {
        if at == 0 {
            return;
        }
        let mut end = if bytes[at - 1] == b'\n' { at - 1 } else { at };
        let mut tail: Vec<(u64, std::ops::Range<usize>)> = Vec::with_capacity(LINES_BEFORE);
        let mut number = self.line;
        while tail.len() < LINES_BEFORE && number > 0 {
            let start = memchr::memrchr(b'\n', &bytes[..end]).map_or(0, |i| i + 1);
            tail.push((number, start..end));
            if start == 0 {
                break;
            }
            end = start - 1;
            number -= 1;
        }
        for (number, range) in tail.into_iter().rev() {
            let cleaned = lossy(clean_line(&bytes[range], &mut self.cleaned));
            let text = dedent(&cleaned, self.indent.unwrap_or_default().outer).to_owned();
            self.recent.push(number, &text);
        }
    }

    /// Remembers `lead`, the lines just before the part, for its first
    /// lines to look back to.
    fn remember_lead(&mut self, lead: &[u8]) {
        if lead.is_empty() {
            return;
        }
        let lead = lead.strip_suffix(b"\n").unwrap_or(lead);
        let outer = self.indent.unwrap_or_default().outer;
        for line in lead.rsplit(|&b| b == b'\n').take(LINES_BEFORE) {
            let cleaned = lossy(clean_line(line, &mut self.cleaned));
            let text = dedent(&cleaned, outer).to_owned();
            self.recent.lead.push(text);
        }
    }

    /// The rank of the line whose message line `number` (without a rank
    /// prefix) continues: a message hard-wrapped by a paste or a terminal
    /// carries the prefix on its first line only. Every line before it in
    /// the message must be as wide as a wrap leaves it.
    fn rank_of_message(&self, number: u64, text: &str) -> Option<u32> {
        if !continues_message(text) {
            return None;
        }
        for back in 1..MAX_JOINED_LINES as u64 {
            let shown = self.recent.get(number.checked_sub(back)?)?;
            if !is_hard_wrapped(shown) {
                return None;
            }
            let before = strip_rank_prefix(shown);
            if before.rank.is_some() {
                return before.rank;
            }
            if !continues_message(before.rest) {
                return None;
            }
        }
        None
    }

    /// The rank of line `number` when it is part of the traceback of an
    /// `mp.spawn` child that the parent re-raised: the process index its
    /// header named (`-- Process N terminated with the following error:`).
    /// Every line passes here, so that a line with a rank prefix of its
    /// own, or one too far past the header, ends the child's lines.
    fn spawned_rank(&mut self, number: u64, prefixed: &Prefixed<'_>) -> Option<u32> {
        if let Some(index) = spawned_process(prefixed.rest) {
            // The header is the parent's line; the child's start after it.
            self.spawned = Some(Spawned {
                index,
                from: number,
            });
            return None;
        }
        let spawned = self.spawned?;
        let past = number
            .checked_sub(spawned.from)
            .is_none_or(|after| after == 0 || after > SPAWNED_LINES);
        if past || prefixed.rank.is_some() {
            self.spawned = None;
            return None;
        }
        Some(spawned.index)
    }

    /// Handles one line: cleans, decodes, matches and records it.
    fn handle_line(&mut self, raw: &[u8], offset: u64, truncated: bool) {
        #[cfg(test)]
        LOOKED_AT.with(|n| n.set(n.get() + 1));
        self.line += 1;
        if truncated || raw.len() > MAX_LINE {
            self.truncated += 1;
        }
        self.match_line(self.line, offset, raw, Feed::All);
    }

    /// Keeps the line before `line` for joining when nothing is kept for
    /// it and it was cut at a wrap width with `line` its rest: a message
    /// hard-wrapped before the rule's literal (`... block: [420,` then
    /// `0,0], thread: [124,0,0] Assertion ...`).
    fn keep_wrapped_line_before(&mut self, line: &Line<'_>) {
        let Some(before) = line.number.checked_sub(1) else {
            return;
        };
        let kept_before = self
            .joinable
            .held
            .checked_sub(1)
            .and_then(|i| self.joinable.lines.get(i))
            .is_some_and(|l| l.number == before);
        if kept_before {
            return;
        }
        // Not the line before the part: only the part before a cut knows
        // whether that line already began or continued a message of its own.
        let Some(shown) = self.recent.get(before).filter(|s| is_hard_wrapped(s)) else {
            return;
        };
        if !continues_line(shown, line) {
            return;
        }
        let shown = shown.to_owned();
        let prefixed = strip_rank_prefix(&shown);
        let indent = self.indent.unwrap_or_default();
        let wrapped = Line {
            number: before,
            offset: line.offset.saturating_sub(shown.len() as u64 + 1),
            text: dedent(prefixed.rest, indent.inner),
            shown: &shown,
            rank: prefixed.rank,
        };
        self.joinable.keep(&wrapped, true);
    }

    /// Cleans, decodes and matches line `number`, and records what matched:
    /// with [`Feed::All`] as a line of the input, with
    /// [`Feed::OpenWindows`] only to complete windows and contexts.
    fn match_line(&mut self, number: u64, offset: u64, raw: &[u8], feed: Feed) {
        let raw = &raw[..raw.len().min(MAX_LINE)];
        let indent = self.indent.unwrap_or_default();
        let cleaned = lossy(clean_line(raw, &mut self.cleaned));
        let text = dedent(&cleaned, indent.outer).to_owned();
        let table = &mut *self.table;
        self.open_after
            .retain(|&slot| table.add_after(slot, &text, CONTEXT_LINES));
        self.recent.push(number, &text);
        let prefixed = strip_rank_prefix(&text);
        let prefixed = Prefixed {
            rest: dedent(prefixed.rest, indent.inner),
            ..prefixed
        };
        // A collector's or launcher's prefix alone is an empty line.
        if feed == Feed::All && !prefixed.rest.trim().is_empty() {
            self.text_line = number;
        }
        let spawned = self.spawned_rank(number, &prefixed);
        let own_rank = prefixed.rank.or(spawned);
        let tracebacks_read = self.read_tracebacks.len();
        let indented = indented_after_prefix(&text, prefixed.rest);
        self.tracebacks.feed(
            indented.as_deref().unwrap_or(prefixed.rest),
            own_rank.or(self.input_rank),
            number,
            feed == Feed::All,
            &mut self.read_tracebacks,
        );
        // A frame's source line is the program's code: what it says
        // (`print("CUDA out of memory, skipping batch")`) is not evidence.
        let source_line = feed == Feed::All && self.tracebacks.fed_source_line();
        // An exception the interpreter reported and went on from (in a
        // finalizer, a callback, at shutdown) did not end the program: the
        // general reading of its exception line (a plain Python error) is
        // dropped. A specific failure it names (a CUDA error raised in
        // `__del__`) still is one.
        let ignored_exception = feed == Feed::All && self.tracebacks.fed_ignored_exception();
        // The child's traceback is over once a traceback completes after
        // its header: the lines after it are the parent's again.
        if self.read_tracebacks.len() > tracebacks_read
            && self.spawned.is_some_and(|s| s.from < number)
        {
            self.spawned = None;
        }
        self.stacks.feed(
            prefixed.rest,
            &text,
            own_rank.or(self.input_rank),
            number,
            feed == Feed::All,
            &mut self.read_stacks,
        );
        self.desyncs.feed(
            prefixed.rest,
            &text,
            own_rank.or(self.input_rank),
            number,
            feed == Feed::All,
            &mut self.read_desyncs,
        );
        self.stalls.feed(
            prefixed.rest,
            &text,
            number,
            feed == Feed::All,
            &mut self.read_stalls,
        );
        let mut line = Line {
            number,
            offset,
            text: prefixed.rest,
            shown: &text,
            rank: own_rank,
        };
        // Only a line holding a literal looks back: the block search hands
        // over no other, and reading every line must find the same.
        let holds_literal = self.scanner.holds_literal(&text);
        // A line of Python pasted with the log, or shown in a `rich`
        // traceback's box, is the program's code too.
        let code = source_line
            || (feed == Feed::All
                && holds_literal
                && (is_python_code(line.text) || is_rich_frame_source(line.text)));
        if feed == Feed::All && !code && (holds_literal || self.scanner.has_pending()) {
            self.keep_wrapped_line_before(&line);
        }
        // A line that continues a kept message is matched with it; the
        // message goes on while lines continue it, and a line holding a
        // rule's literal starts a new one.
        // Past a part's end (`Feed::OpenWindows`), a message kept at the
        // cut still takes the lines that continue it: what is found never
        // depends on where the cuts fell.
        let continued = (!code && self.joinable.held < MAX_JOINED_LINES)
            .then(|| self.joinable.continued_by(&line))
            .flatten();
        let continues = continued.is_some();
        if feed == Feed::OpenWindows && !continues {
            self.joinable.held = 0;
        }
        if line.rank.is_none() && !continues {
            line.rank = self.rank_of_message(number, line.text);
        }
        if let Some(rank) = continued {
            line.rank = rank;
            self.joinable.keep(&line, false);
            self.scanner
                .feed_joined(&self.joinable.run(), &mut self.matches);
        }
        // Quiet by the whole line: a literal in what a prefix holds (a
        // level such as `[ERROR]`) keeps the line for the lines that may
        // continue it.
        let quiet = feed == Feed::All && (code || (!holds_literal && !self.scanner.has_pending()));
        match feed {
            Feed::All if quiet => {}
            Feed::All => {
                self.scanner.feed(&line, &mut self.matches);
                if let Some(embedded) = embedded_message(line.text) {
                    self.scanner
                        .feed_embedded(&line, &embedded, &mut self.matches);
                }
            }
            Feed::OpenWindows => self.scanner.feed_open_windows(&line, &mut self.matches),
        }
        if feed == Feed::All && !continues {
            if quiet {
                self.joinable.held = 0;
            } else {
                self.joinable.keep(&line, true);
            }
        }
        if self.matches.is_empty() {
            // Only a job's own lines: not the text coroner writes of cores.
            if feed == Feed::All && !quiet && self.metrics.is_some() {
                let position = self.table.input();
                let at = self.input_line(number);
                self.table
                    .unread
                    .note(prefixed.rest, &text, self.input, position, at);
            }
            return;
        }
        let mut matches = std::mem::take(&mut self.matches);
        if ignored_exception {
            let rules = self.rules.rules();
            matches.retain(|m| {
                let on_this_line = m.lines.first().is_none_or(|l| l.number == number);
                let plain = rules.get(m.rule).is_some_and(|r| {
                    r.category == Category::PythonError && (r.fallback || r.generic)
                });
                !(on_this_line && plain)
            });
        }
        for mut m in matches {
            let anchor_line = m.lines.first().map_or(number, |l| l.number);
            let recent = &self.recent;
            if let Some(rule) = self.rules.rules().get(m.rule).filter(|r| r.looks_back()) {
                // Lines of another rank, interleaved, are not this one's.
                let rank = m.line_rank;
                let mut before: Vec<(u64, &str)> = (1..=Rule::LOOK_BACK as u64 + 1)
                    .filter_map(|k| Some((k, recent.before(anchor_line, k)?)))
                    .map(|(k, text)| (k, strip_rank_prefix(text)))
                    .filter(|(_, p)| p.rank.is_none() || rank.is_none() || p.rank == rank)
                    .map(|(k, p)| (k, p.rest))
                    .collect();
                // Python 3.11 and later underline the call with a line of
                // carets: one such line is passed over, and only then does
                // the look-back reach a line further.
                match before.iter().position(|&(_, text)| is_caret_line(text)) {
                    Some(caret) => {
                        before.remove(caret);
                    }
                    None => before.retain(|&(k, _)| k <= Rule::LOOK_BACK as u64),
                }
                let before = before.iter().map(|&(_, text)| text);
                if !rule.capture_before(before, &mut m.captures) {
                    continue;
                }
            }
            // Evidence is numbered as the input has it; its context is
            // what the readers saw around it.
            let spacing = self.spacing.as_ref();
            if let Some(spacing) = spacing {
                for l in &mut m.lines {
                    l.number = spacing.input_line(l.number);
                }
            }
            let slot = self.table.record(m, self.input, self.input_rank, |n| {
                recent.context(spacing.map_or(n, |s| s.read_line(n)))
            });
            self.announce(slot);
            if let Some(slot) = slot {
                if anchor_line == number {
                    self.open_after.push(slot);
                }
            }
        }
    }
}

/// A line of Python's traceback that only underlines the expression above
/// it (`    ^^^^^^^^`, `    ~~~~^^^^`).
fn is_caret_line(text: &str) -> bool {
    let marks = text.trim();
    marks.contains('^') && marks.chars().all(|c| c == '^' || c == '~')
}

#[cfg(test)]
thread_local! {
    /// Lines this thread's scans looked at one by one.
    static LOOKED_AT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// What a line is matched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Feed {
    /// A line of the input: any rule may start a match on it.
    All,
    /// A line past the end of a part: only windows open there continue.
    OpenWindows,
}

/// The next literal each search finds in a block, cached: `None`
/// not searched yet, `Some(None)` no more in the block.
#[derive(Debug, Default)]
struct Candidates {
    next: Vec<Option<Option<usize>>>,
}

impl Candidates {
    /// The start of the first literal at or after `pos`.
    fn at_or_after(
        &mut self,
        pos: usize,
        scanner: &Scanner<'_>,
        text: &[u8],
        lowered: &[u8],
    ) -> Option<usize> {
        self.next.resize(scanner.searches(), None);
        let mut first: Option<usize> = None;
        for (i, cached) in self.next.iter_mut().enumerate() {
            if cached.is_none_or(|c| c.is_some_and(|at| at < pos)) {
                *cached = Some(scanner.next_literal(i, text, lowered, pos));
            }
            if let Some(Some(at)) = cached {
                first = Some(first.map_or(*at, |f| f.min(*at)));
            }
        }
        first
    }
}

/// Whether a line holds text once cleaned as every line is: more than
/// spaces, quote markers, escape sequences and a page's no-break spaces,
/// the blank lines a paste often ends with, and more than the prefix a
/// collector or launcher puts on every line (`kubectl logs --timestamps`
/// stamps the program's empty lines too).
fn has_text(raw: &[u8], scratch: &mut Vec<u8>) -> bool {
    let cleaned = clean_line(raw, scratch);
    if cleaned.iter().all(u8::is_ascii_whitespace) {
        return false;
    }
    !strip_rank_prefix(&lossy(cleaned)).rest.trim().is_empty()
}

/// Where the last line of `region` (whole lines) that holds text starts,
/// looking at its lines from the end.
fn last_text_line_start(region: &[u8], scratch: &mut Vec<u8>) -> Option<usize> {
    let mut end = region.strip_suffix(b"\n").unwrap_or(region).len();
    loop {
        let start = memchr::memrchr(b'\n', &region[..end]).map_or(0, |i| i + 1);
        if has_text(&region[start..end], scratch) {
            return Some(start);
        }
        end = start.checked_sub(1)?;
    }
}

/// `rest` (what follows a line's prefixes in `text`) with the indentation
/// it had after its prefix, when reading the prefix off took it: the
/// spaces after `[rank0]: ` or a Ray worker's tag, but for the one that
/// ends the prefix. A frame's source line under such a prefix is told by
/// its indentation as it is without one.
fn indented_after_prefix(text: &str, rest: &str) -> Option<String> {
    let before = text.get(..text.len().checked_sub(rest.len())?)?;
    let prefix = before.trim_end_matches([' ', '\t']);
    let spaces = before.get(prefix.len()..)?;
    let kept = spaces.get(1..)?;
    (!prefix.trim_start().is_empty() && !kept.is_empty() && !rest.starts_with([' ', '\t']))
        .then(|| format!("{kept}{rest}"))
}

/// Index of the `\n` ending the line that holds `at`, or the end of
/// `bytes`.
fn line_end(bytes: &[u8], at: usize) -> usize {
    memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{builtin_rules, scanned};
    use coroner_ingest::{Input, InputSource};
    use std::path::{Path, PathBuf};

    /// The findings of `text` scanned as one log.
    fn digest(text: &[u8], rules: &RuleSet) -> Vec<String> {
        scanned(text, rules).0.digest(rules)
    }

    /// The trends read from `text` with the given sampling.
    fn trends_with(text: &[u8], sampling: MetricSampling) -> Vec<String> {
        let input = Input {
            display: "rank3.log".to_owned(),
            source: InputSource::Stdin,
            rank: Some(3),
            explicit: true,
            loadable_elf: None,
        };
        let rules = RuleSet::new(Vec::new()).unwrap_or_else(|e| panic!("{e:?}"));
        let mut table = FindingTable::for_input(0);
        let mut summary = InputSummary::new("rank3.log", InputKind::Log);
        let part = Part {
            reader: text,
            offset: 0,
            after: None::<&[u8]>,
            live: false,
            metrics: sampling,
            lead: Vec::new(),
        };
        let (metrics, _) = scan_part(
            &input,
            InputKind::Log,
            part,
            &rules,
            &mut table,
            &mut summary,
            None,
        );
        metrics.trends().into_iter().map(|t| t.text).collect()
    }

    /// A frame's source line under torchrun's `[rank0]: ` or a Ray
    /// worker's tag is the program's code, as it is without a prefix: its
    /// comment naming a CUDA error is no evidence.
    #[test]
    fn a_frames_source_line_under_a_prefix_is_code() {
        let rules = builtin_rules();
        let traceback = "Traceback (most recent call last):\n  File \"flex_test.py\", line 69, in <module>\n    fwd_bwd(700)  # raises: CUDA error: an illegal memory access was encountered\nRuntimeError: boom\n";
        for prefix in [
            "",
            "[rank0]: ",
            "(RayTrainWorker pid=4242, ip=10.0.0.7) ",
            "[rank0]: (Runner pid=7) ",
        ] {
            let log: String = traceback
                .lines()
                .map(|l| format!("{prefix}{l}\n"))
                .collect();
            let found = digest(log.as_bytes(), &rules);
            assert!(
                !found.iter().any(|f| f.contains("illegal")),
                "{prefix:?}: {found:?}"
            );
            assert!(
                found.iter().any(|f| f.contains("python-exception")),
                "{prefix:?}: {found:?}"
            );
        }
    }

    /// The blank lines a paste ends with (spaces, empty quotes, a page's
    /// escaped quote or no-break space, a lone escape sequence, a
    /// collector's time or a rank's prefix with nothing after it) are counted
    /// as lines but not as lines with text, whether the last text is in a
    /// line looked at or in lines skipped unread; a prompt is text.
    #[test]
    fn a_pastes_trailing_blank_lines_are_not_text() {
        let rules = builtin_rules();
        let error = "RuntimeError: CUDA error: an illegal memory access was encountered\n";
        let blank = "\n   \n> \n>\n&gt; \n\u{a0}\n\x1b[0m\n\x0c\n2024-03-01T10:11:12.123456789Z \n[rank0]:\n";
        for (log, last) in [
            (format!("step 1\nstep 2\n{error}{blank}"), 3),
            (format!("{error}step 1\nstep 2\n{blank}"), 3),
            (
                format!("{error}step 1\nstep 2\nstep 3\nstep 4\nstep 5\n{blank}"),
                6,
            ),
            (
                format!("{error}step 1\nstep 2\nstep 3\nstep 4\n>>> \n{blank}"),
                6,
            ),
            (blank.to_owned(), 0),
            // Lines no rule looks at are skipped unread (in an input with
            // no escape sequence: one has every line looked at).
            (
                (1..=50).map(|n| format!("step {n}\n")).collect::<String>() + "\n  \n> \n>\n\n",
                50,
            ),
        ] {
            let (_, summary) = scanned(log.as_bytes(), &rules);
            assert_eq!(summary.lines, log.lines().count() as u64, "{log:?}");
            assert_eq!(summary.last_text_line, last, "{log:?}");
        }
    }

    /// A log copied from an issue thread reads as the log: quoted with
    /// `> `, with its quotes and brackets escaped as a web page escapes
    /// them, with file names turned into links, or indented as a block.
    #[test]
    fn a_log_copied_from_a_web_page_reads_as_the_log() {
        let rules = builtin_rules();
        let log = "Traceback (most recent call last):\n  File \"/w/train.py\", line 9, in <module>\n    main()\nRuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, unhandled cuda error, NCCL version 2.14.3\nncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 'out of memory'\n";
        let plain = digest(log.as_bytes(), &rules);
        assert!(!plain.is_empty());
        let quoted: String = log.lines().map(|l| format!("> {l}\n")).collect();
        let escaped = log
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;");
        let linked = log.replace("train.py", "[train.py](http://train.py/)");
        let indented: String = log.lines().map(|l| format!("    {l}\n")).collect();
        for copy in [quoted, escaped, linked, indented] {
            assert_eq!(digest(copy.as_bytes(), &rules), plain, "{copy}");
        }
    }

    /// A log pasted with a blank line after every line is read as the log:
    /// the same findings, from messages that go on over a second line and
    /// from tracebacks, with the pasted copy's own line numbers.
    #[test]
    fn a_double_spaced_paste_reads_as_the_log() {
        let rules = builtin_rules();
        let log = "Traceback (most recent call last):\n  File \"/w/train.py\", line 9, in <module>\n    trainer = Trainer(gpus=[1])\npytorch_lightning.utilities.exceptions.MisconfigurationException: You requested GPUs: [1]\n But your machine only has: []\n\nTraceback (most recent call last):\n  File \"/w/train.py\", line 9, in <module>\n    main()\nRuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, unhandled cuda error, NCCL version 2.14.3\nncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 'out of memory'\n";
        let spaced: String = log.lines().map(|l| format!("{l}\n\n")).collect();
        let read = |text: &str| {
            let findings = scanned(text.as_bytes(), &rules).0.into_findings(&rules);
            let mut seen: Vec<(String, Vec<u64>, Vec<u64>)> = findings
                .iter()
                .map(|f| {
                    let lines = f.evidence.iter().map(|e| e.line).collect();
                    let exceptions = f
                        .traceback
                        .iter()
                        .flat_map(|t| &t.exceptions)
                        .map(|e| e.line)
                        .collect();
                    (f.rule.clone(), lines, exceptions)
                })
                .collect();
            seen.sort();
            seen
        };
        let plain = read(log);
        assert!(plain
            .iter()
            .any(|(rule, ..)| rule == "lightning-requested-gpu-none-visible"));
        // Line n of the log is line 2n - 1 of its double-spaced copy; the
        // log's own blank line (6) is read from the second blank line of
        // the three that stand for it.
        let moved = |lines: &Vec<u64>| lines.iter().map(|n| 2 * n - 1).collect::<Vec<_>>();
        let expected: Vec<_> = plain
            .iter()
            .map(|(rule, lines, exceptions)| (rule.clone(), moved(lines), moved(exceptions)))
            .collect();
        assert_eq!(read(&spaced), expected);
        let crlf = spaced.replace('\n', "\r\n");
        assert_eq!(read(&crlf), expected);
    }

    /// A line cut at a wrap width inside a number or a word, before or
    /// after the rule's literal, is read whole.
    #[test]
    fn lines_cut_at_a_wrap_width_are_read_whole() {
        let rules = builtin_rules();
        let assert_line = "/opt/pytorch/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1146: indexSelectLargeIndex: block: [420,0,0], thread: [124,0,0] Assertion `srcIndex < srcSelectDimSize` failed.";
        let duplicate = "qgpu2018:59522:59993 [0] init.cc:795 NCCL WARN Duplicate GPU detected : rank 6 and rank 4 both on CUDA device 1a000";
        // Cut at a space: the rest starts with it.
        let hip = "2019-01-08 19:06:11.303639: E tensorflow/stream_executor/rocm/rocm_driver.cc:601] failed to allocate 7.35G (7889485824 bytes) from device: hipError_t(1002)";
        for (line, rule) in [
            (assert_line, "cuda-kernel-assertion-failed"),
            (duplicate, "nccl-duplicate-gpu"),
            (hip, "cuda-driver-out-of-memory"),
        ] {
            assert_digest_has(format!("{line}\n").as_bytes(), &rules, rule);
            let (head, tail) = line.split_at(100);
            assert_digest_has(format!("{head}\n{tail}\n").as_bytes(), &rules, rule);
        }
    }

    /// One small per-rank log among thousands is sampled sparsely, and its
    /// trends are still found: here throughput falling to a tenth.
    #[test]
    fn sparse_sampling_still_finds_a_small_logs_trend() {
        let mut log = String::new();
        for step in 1..=200u32 {
            let tokens = if step <= 100 { 100_000 } else { 9_000 };
            let loss = 2.0 - f64::from(step) / 1000.0;
            log.push_str(&format!(
                "step {step} | loss {loss:.4} | lr 3.0e-04 | tokens/s {tokens}\n"
            ));
        }
        assert!(log.len() < METRIC_ALL_LINES_BELOW);
        let dense = trends_with(log.as_bytes(), MetricSampling::Dense);
        let sparse = trends_with(log.as_bytes(), MetricSampling::Sparse);
        // The same trend, found at a sampled line near the first slow one.
        let same = |t: &String| {
            t.starts_with("trend: throughput falls from 100000.0 tokens/s") && t.ends_with("-91.0%")
        };
        assert!(dense.len() == 1 && dense.iter().all(same), "{dense:?}");
        assert!(sparse.len() == 1 && sparse.iter().all(same), "{sparse:?}");
        assert!(trends_with(log.as_bytes(), MetricSampling::Off).is_empty());
    }

    /// Fails unless scanning `text` gives a finding whose digest starts
    /// with `prefix` (rule id, rank, ...).
    fn assert_digest_has(text: &[u8], rules: &RuleSet, prefix: &str) {
        let got = digest(text, rules);
        assert!(got.iter().any(|d| d.starts_with(prefix)), "{got:?}");
    }

    fn text_logs(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                text_logs(&path, out);
            } else if path
                .extension()
                .is_some_and(|e| e == "log" || e == "txt" || e == "out")
            {
                out.push(path);
            }
        }
    }

    /// A healthy training log: NCCL's start-up lines from a real run and
    /// metric lines in the shapes common trainers print.
    fn healthy_log(steps: u64) -> String {
        let nccl = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../fixtures/real-gpu/logs/nccl_info.log"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut log = String::new();
        let mut nccl_lines = nccl.lines().cycle();
        for step in 1..=steps {
            let r = step % 8;
            let x = (step % 97) as f64 / 97.0;
            let line = match step % 8 {
                0 => format!("{{'loss': {:.4}, 'grad_norm': {:.3}, 'learning_rate': 1.9e-05, 'epoch': 0.{r}}}", 2.0 - x, 0.5 + x),
                1 => format!(" iteration {step:8}/  500000 | consumed samples: {:12} | elapsed time per iteration (ms): 1234.5 | learning rate: 1.500E-04 | global batch size:   512 | lm loss: {:.6E} | loss scale: 65536.0 | grad norm: {:.3} | number of skipped iterations:   0 | number of nan iterations:   0 |", step * 512, 7.0 - x, 0.9 + x),
                2 => format!("[rank{r}]: step {step} | loss {:.4} | lr 3.0e-04 | grad_norm {:.3} | mem_alloc 11.{r}GiB | tokens/s 10{r}123", 2.5 - x, 1.0 + x),
                3 => format!("[2024-05-01 12:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, lr=[0.0001], mom=[(0.9, 0.95)]"),
                4 => format!("[rank0]:[titan] 2024-11-01 10:00:00,123 - root - INFO - step: {step:3}  loss: {:.4}  memory: 23.45GiB(24.68%)  tps: 1,234  mfu: 12.34%", 9.0 - x),
                5 => format!("Train Epoch: {r} [{}/60000 ({r}%)]\tLoss: {:.6}", step * 64 % 60000, 0.5 - x / 4.0),
                6 => format!("{step}/1875 [==============================] - 5s 2ms/step - loss: {:.4} - accuracy: 0.9{r}12", 0.3 - x / 4.0),
                _ => nccl_lines.next().unwrap_or_default().to_owned(),
            };
            log.push_str(&line);
            log.push('\n');
            for _ in 0..2 {
                log.push_str(nccl_lines.next().unwrap_or_default());
                log.push('\n');
            }
        }
        log
    }

    /// The block search keeps the scan at memory speed only while few
    /// lines of a healthy log hold a rule's literal: a literal found on
    /// every metric line (`grad_norm`), or a line held for joining that
    /// keeps the next one held, would make it look at every line. Some
    /// healthy lines do hold one, and the line after each is looked at
    /// too: Megatron's `number of nan iterations` (one metric line in
    /// eight here), NCCL's version and device lines.
    #[test]
    fn a_healthy_training_log_is_looked_at_line_by_line_rarely() {
        let rules = builtin_rules();
        let log = healthy_log(20_000);
        let lines = log.lines().count() as u64;
        LOOKED_AT.with(|n| n.set(0));
        let found = digest(log.as_bytes(), &rules);
        let looked_at = LOOKED_AT.with(std::cell::Cell::get);
        assert!(
            looked_at * 100 <= lines * 12,
            "{looked_at} of {lines} lines looked at one by one; found {found:?}"
        );
    }

    /// An exception line inside a flattened traceback or a JSON field is
    /// read by the rules for its own line, with the whole line as evidence.
    #[test]
    fn embedded_exception_lines_are_read() {
        let rules = builtin_rules();
        assert_digest_has(b"File \"train.py\", line 23, in <module> from transformers import X ModuleNotFoundError: No module named 'transformers'\n", &rules, "python-module-not-found ");
        assert_digest_has(
            b"{\n  \"message\": \"RendezvousTimeoutError: \",\n}\n",
            &rules,
            "elastic-rendezvous-timeout ",
        );
    }

    /// A rule that needs a line before its anchor leaves the line's plain
    /// reading in place until that line is found, and where it is not.
    #[test]
    fn a_rule_needing_a_line_before_leaves_the_plain_reading_without_it() {
        let rules = builtin_rules();
        let raised = |file: &str| {
            format!(
                "  File \"{file}\", line 212, in __init__\n    engine_args = EngineArgs(\nTypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_use_ray'\n"
            )
        };
        let library = raised("/usr/lib/python3.10/dist-packages/vllm/entrypoints/llm.py");
        assert_digest_has(
            library.as_bytes(),
            &rules,
            "library-rejects-keyword-argument ",
        );
        assert_digest_has(library.as_bytes(), &rules, "python-exception ");
        // Python 3.11's caret line under the call.
        let underlined = library.replace(
            "EngineArgs(\n",
            "EngineArgs(\n                  ^^^^^^^^^^^\n",
        );
        assert_digest_has(
            underlined.as_bytes(),
            &rules,
            "library-rejects-keyword-argument ",
        );
        let own = raised("vllm/entrypoints/llm.py");
        assert_digest_has(own.as_bytes(), &rules, "python-exception ");
        let (table, _) = scanned(own.as_bytes(), &rules);
        assert!(table
            .into_findings(&rules)
            .iter()
            .all(|f| f.rule != "library-rejects-keyword-argument"));
    }

    /// Lines after `mp.spawn`'s header are the named child's until its
    /// traceback ends; a line with its own prefix is its own rank's.
    #[test]
    fn a_spawned_childs_traceback_is_that_childs() {
        let rules = builtin_rules();
        let text = concat!(
            "Traceback (most recent call last):\n",
            "  File \"train.py\", line 40, in <module>\n",
            "    mp.spawn(main, nprocs=4)\n",
            "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n",
            "torch.multiprocessing.spawn.ProcessRaisedException: \n",
            "\n",
            "-- Process 2 terminated with the following error:\n",
            "Traceback (most recent call last):\n",
            "  File \"/usr/lib/python3.8/site-packages/torch/multiprocessing/spawn.py\", line 69, in _wrap\n",
            "    fn(i, *args)\n",
            "  File \"train.py\", line 12, in main\n",
            "    torch.cuda.set_device(rank)\n",
            "RuntimeError: CUDA error: invalid device ordinal\n",
        );
        assert_digest_has(text.as_bytes(), &rules, "cuda-invalid-device Some(2) ");
        // A line with its own prefix after the header is its rank's.
        let text = "-- Process 2 terminated with the following error:\n[rank0]: RuntimeError: CUDA error: invalid device ordinal\n";
        assert_digest_has(text.as_bytes(), &rules, "cuda-invalid-device Some(0) ");
    }

    /// A rank's message hard-wrapped by a paste keeps its rank on the lines
    /// without the prefix; a short line before an unprefixed one gives it
    /// no rank.
    #[test]
    fn wrapped_lines_keep_their_rank() {
        let rules = builtin_rules();
        let text = "[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 6] ProcessGroupNCCL'\ns watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. This typically indi\n";
        assert_digest_has(text.as_bytes(), &rules, "nccl-watchdog-hang Some(6) ");
        let text = "[rank3]: step 12 | loss 2.5\n/pytorch/aten/src/ATen/native/cuda/Loss.cu:245: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\n";
        assert_digest_has(
            text.as_bytes(),
            &rules,
            "cuda-kernel-assertion-failed None ",
        );
    }

    /// The fast path (a block-wide search, lines between hits only counted)
    /// finds what handling every line finds. A colour code at the start of
    /// a block sends all its lines through the line-by-line path, and is
    /// cleaned away before matching.
    #[test]
    fn the_block_search_misses_no_line_of_any_fixture() {
        let rules = builtin_rules();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let mut logs = Vec::new();
        text_logs(&root, &mut logs);
        logs.sort();
        assert!(
            logs.len() > 40,
            "{} logs under {}",
            logs.len(),
            root.display()
        );
        let mut compared = 0;
        for path in logs {
            let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
            if text.len() >= 1 << 20 {
                continue;
            }
            let mut every_line = b"\x1b[0m".to_vec();
            every_line.extend_from_slice(&text);
            let fast = digest(&text, &rules);
            assert_eq!(fast, digest(&every_line, &rules), "{}", path.display());
            compared += usize::from(!fast.is_empty());
        }
        assert!(compared > 30, "only {compared} logs with findings");
    }
}

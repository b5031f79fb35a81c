//! Collapsing matches into findings: one per rule and rank, with a count,
//! the first location, a few evidence lines and the first captures.

use coroner_logs::{is_host_name, line_host, line_time, nccl_process, strip_rank_prefix};
use coroner_model::{
    inert, inert_capped, Context, Curve, Evidence, Finding, Location, Printer, Traceback,
};
use coroner_rules::{Match, RuleSet};
use std::collections::{BinaryHeap, HashMap};

/// What tells findings of one rule apart: the rank and GPU they are about,
/// and, for findings of no rank, the node (the same GPU address exists on
/// every node), the process that printed them (NCCL's `host:pid:tid`
/// header: each process may turn out to be another rank) and the size of
/// the communicator a line names (`rank 3 nranks 8`: a process's lines
/// about its tensor-parallel group and about the world are two facts),
/// those two as one number. A rank's lines that name its node and those
/// that do not are one finding.
type Key = (usize, Option<u32>, Option<String>, Option<String>, u64);

fn key(
    rule: usize,
    rank: Option<u32>,
    host: Option<&String>,
    gpu: Option<&String>,
    printer: Option<Printer>,
    nranks: Option<&str>,
) -> Key {
    match rank {
        None => (
            rule,
            rank,
            host.cloned(),
            gpu.cloned(),
            process_key(printer, nranks),
        ),
        Some(_) => (rule, rank, None, gpu.cloned(), 0),
    }
}

/// The printing process and communicator size of a rank-less match, as
/// one number (0 when no NCCL header printed it): a key is kept per
/// finding, and a job of 10^5 ranks has as many.
fn process_key(printer: Option<Printer>, nranks: Option<&str>) -> u64 {
    let Some(p) = printer else { return 0 };
    let size = nranks.and_then(|n| n.parse::<u32>().ok()).unwrap_or(0);
    (u64::from(p.pid) + 1) << 32 | u64::from(size)
}

/// The communicator size a match captured (`nranks`), if any.
fn captured_nranks(captures: &[(String, String)]) -> Option<&str> {
    captures
        .iter()
        .find(|(k, _)| k == "nranks")
        .map(|(_, v)| v.as_str())
}

/// Findings of one rule whose evidence keeps its surrounding lines.
const CONTEXT_PER_RULE: usize = 64;
/// Evidence entries kept per finding.
const MAX_EVIDENCE: usize = 3;
/// Characters of a line kept in evidence.
pub(crate) const MAX_EVIDENCE_CHARS: usize = 400;
/// Characters of a capture kept (the rest is cut, marked `…`): a capture
/// fills messages, and a rule may repeat it.
pub(crate) const MAX_CAPTURE_CHARS: usize = 400;

#[derive(Debug, Clone)]
struct Entry {
    rule: usize,
    rank: Option<u32>,
    host: Option<String>,
    gpu: Option<String>,
    count: u64,
    first: Location,
    /// The last line of its matches in the input it was first seen in:
    /// where a `tail_lines` rule's finding ends, whatever evidence it keeps.
    last: u64,
    order: Order,
    evidence: Vec<Evidence>,
    captures: Vec<(String, String)>,
    traceback: Option<Traceback>,
    printed_by: Option<Printer>,
    curve: Option<Curve>,
}

/// Where a finding sorts in the report: the position of its input, then
/// its first line.
type Order = (usize, u64);

/// What [`FindingTable::ranked_captures`] gives of one finding.
pub(crate) struct RankedCaptures<'a> {
    /// Index of the finding's rule in the rule set.
    pub(crate) rule: usize,
    /// Position of the finding's input among the incident's.
    pub(crate) input: usize,
    pub(crate) rank: u32,
    /// The captures asked for, by position; those the finding lacks `None`.
    pub(crate) values: Vec<Option<&'a str>>,
    pub(crate) first: &'a Location,
    pub(crate) evidence: Option<&'a Evidence>,
}

/// Findings under construction: one input's, or (merged) an incident's.
#[derive(Debug, Default)]
pub(crate) struct FindingTable {
    entries: Vec<Entry>,
    index: HashMap<Key, usize>,
    /// For each rule, the findings recorded here whose evidence keeps its
    /// surrounding lines, by order then position, the last on top: at
    /// most [`CONTEXT_PER_RULE`], since a finding with that many of its
    /// rule before it keeps none in the report. A job of 100 000 ranks
    /// then holds the lines around 64 of its findings, not around each.
    with_context: HashMap<usize, BinaryHeap<(Order, usize)>>,
    /// Whether `with_context` is kept: not where the line numbers are
    /// replaced out of order before the table is merged.
    limits_context: bool,
    /// Position of the input being scanned among the incident's inputs.
    input: usize,
    /// Lines that look like failures but that no rule read.
    pub(crate) unread: crate::unread::Unread,
    /// The thread stack dumps read from the inputs, with the position and
    /// display path of the input each came from.
    pub(crate) stack_dumps: Vec<(usize, String, coroner_logs::StackDump)>,
    /// The desync reports' snapshots read, like `stack_dumps`.
    pub(crate) desyncs: Vec<(usize, String, coroner_logs::DesyncSnapshot)>,
    /// Horovod's stall reports read, like `stack_dumps`.
    pub(crate) stall_reports: Vec<(usize, String, coroner_logs::StallReport)>,
    /// The flight-recorder dumps read, with the position and display path
    /// of their input and their rank.
    pub(crate) flight_records: Vec<(usize, String, u32, coroner_dumps::flight::FlightRecord)>,
}

/// Stack dumps kept per incident at most.
const MAX_STACK_DUMPS: usize = 4096;

/// Stall reports kept per incident at most (each holds up to a few
/// hundred lines).
const MAX_STALL_REPORTS: usize = 64;

/// Appends `items` to `into` while it holds fewer than `cap`.
fn extend_capped<T>(into: &mut Vec<T>, items: impl IntoIterator<Item = T>, cap: usize) {
    let room = cap.saturating_sub(into.len());
    into.extend(items.into_iter().take(room));
}

/// Where the first evidence of a new finding sits, so that the caller can
/// add the lines that follow it.
pub(crate) type EvidenceSlot = (usize, usize);

impl FindingTable {
    /// An empty table for the input at position `input`; its findings sort
    /// after those of earlier inputs.
    pub(crate) fn for_input(input: usize) -> Self {
        FindingTable {
            input,
            limits_context: true,
            ..FindingTable::default()
        }
    }

    /// An empty table like [`FindingTable::for_input`]'s whose line
    /// numbers are replaced out of their order ([`Self::remap_lines`])
    /// before it is merged: which findings come first is not known while
    /// it is filled, so each keeps its surrounding lines until then.
    pub(crate) fn for_input_remapped(input: usize) -> Self {
        FindingTable {
            input,
            ..FindingTable::default()
        }
    }

    /// Position of the input this table is for.
    pub(crate) fn input(&self) -> usize {
        self.input
    }

    /// Moves every line number `by` lines down: the table of a later part of
    /// an input counted its lines from the part's start.
    pub(crate) fn shift_lines(&mut self, by: u64) {
        self.remap_lines(|n| n + by);
    }

    /// Replaces every line number `n` with `to(n)`, keeping the order of
    /// first appearance by the new numbers.
    pub(crate) fn remap_lines(&mut self, to: impl Fn(u64) -> u64) {
        // The orders kept are the old ones: later findings start afresh.
        self.with_context.clear();
        self.unread.remap_lines(&to);
        for (_, _, snapshot) in &mut self.desyncs {
            snapshot.line = to(snapshot.line);
            for group in &mut snapshot.groups {
                group.line = to(group.line);
            }
        }
        for (_, _, report) in &mut self.stall_reports {
            report.line = to(report.line);
            for entry in &mut report.entries {
                entry.line = to(entry.line);
            }
            for (line, _) in &mut report.lines {
                *line = to(*line);
            }
        }
        for (_, _, dump) in &mut self.stack_dumps {
            dump.line = to(dump.line);
            for thread in &mut dump.threads {
                thread.line = to(thread.line);
                for (line, _) in &mut thread.frame_lines {
                    *line = to(*line);
                }
            }
        }
        for e in &mut self.entries {
            e.first.line = to(e.first.line);
            e.last = to(e.last);
            e.order.1 = to(e.order.1);
            for ev in &mut e.evidence {
                ev.line = to(ev.line);
            }
            let exceptions = e.traceback.iter_mut().flat_map(|t| &mut t.exceptions);
            for exception in exceptions {
                exception.line = to(exception.line);
            }
        }
    }

    /// Gives the findings scanned from text coroner wrote, one line per
    /// item (trend sentences), what the items stand for: a finding whose
    /// first match was on line k is placed at `line_of(k)`, its evidence
    /// becomes `evidence_of` of the lines its matches were on, and it gets
    /// the curve `curve_of(k)`.
    pub(crate) fn stand_for(
        &mut self,
        line_of: impl Fn(u64) -> u64,
        evidence_of: impl Fn(u64) -> Vec<Evidence>,
        curve_of: impl Fn(u64) -> Option<Curve>,
    ) {
        // Both are looked up by the written text's lines, before they move.
        let shown: Vec<(Vec<Evidence>, Option<Curve>)> = self
            .entries
            .iter()
            .map(|e| {
                let mut evidence: Vec<Evidence> = e
                    .evidence
                    .iter()
                    .flat_map(|ev| evidence_of(ev.line))
                    .collect();
                evidence.sort_by_key(|ev| ev.line);
                evidence.dedup_by_key(|ev| ev.line);
                evidence.truncate(MAX_EVIDENCE);
                (evidence, curve_of(e.first.line))
            })
            .collect();
        self.remap_lines(line_of);
        for (e, (evidence, curve)) in self.entries.iter_mut().zip(shown) {
            e.evidence = evidence;
            e.curve = curve;
        }
    }

    /// Places every finding where `at` is and gives it `evidence`: the
    /// table of text coroner wrote about those lines.
    pub(crate) fn place_at(&mut self, at: &Location, evidence: &[Evidence]) {
        self.with_context.clear();
        for e in &mut self.entries {
            e.first = at.clone();
            e.last = at.line;
            e.order.1 = at.line;
            e.evidence = evidence.to_vec();
        }
    }

    /// Gives each finding whose first match is the exception line of one
    /// of `tracebacks` (read from the same lines) that traceback.
    pub(crate) fn attach_tracebacks(&mut self, tracebacks: &[Traceback]) {
        for entry in self.entries.iter_mut().filter(|e| e.traceback.is_none()) {
            let line = entry.first.line;
            entry.traceback = tracebacks
                .iter()
                .find(|t| t.exceptions.iter().any(|e| e.line == line))
                .cloned();
        }
    }

    /// Each finding with a rank whose first match captured any of `names`:
    /// the captured values in their order, with where the finding is.
    pub(crate) fn ranked_captures<'a>(
        &'a self,
        names: &'a [&str],
    ) -> impl Iterator<Item = RankedCaptures<'a>> + 'a {
        self.entries.iter().filter_map(move |e| {
            let rank = e.rank?;
            let values: Vec<Option<&str>> = names
                .iter()
                .map(|name| {
                    e.captures
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, v)| v.as_str())
                })
                .collect();
            if values.iter().all(Option::is_none) {
                return None;
            }
            Some(RankedCaptures {
                rule: e.rule,
                input: e.order.0,
                rank,
                values,
                first: &e.first,
                evidence: e.evidence.first(),
            })
        })
    }

    /// Keeps the flight-recorder dump of `rank` read from input `display`.
    pub(crate) fn add_flight_record(
        &mut self,
        display: &str,
        rank: u32,
        record: coroner_dumps::flight::FlightRecord,
    ) {
        self.flight_records
            .push((self.input, display.to_owned(), rank, record));
    }

    /// Keeps the desync snapshots read from input `display`.
    pub(crate) fn add_desyncs(
        &mut self,
        display: &str,
        snapshots: Vec<coroner_logs::DesyncSnapshot>,
    ) {
        let tagged = snapshots
            .into_iter()
            .map(|d| (self.input, display.to_owned(), d));
        extend_capped(&mut self.desyncs, tagged, MAX_STACK_DUMPS);
    }

    /// Keeps the stall reports read from input `display`.
    pub(crate) fn add_stall_reports(
        &mut self,
        display: &str,
        reports: Vec<coroner_logs::StallReport>,
    ) {
        let tagged = reports
            .into_iter()
            .map(|r| (self.input, display.to_owned(), r));
        extend_capped(&mut self.stall_reports, tagged, MAX_STALL_REPORTS);
    }

    /// Keeps the stack dumps read from input `display`.
    pub(crate) fn add_stack_dumps(&mut self, display: &str, dumps: Vec<coroner_logs::StackDump>) {
        let tagged = dumps
            .into_iter()
            .map(|d| (self.input, display.to_owned(), d));
        extend_capped(&mut self.stack_dumps, tagged, MAX_STACK_DUMPS);
    }

    /// Adds the findings of a later input, or of a later part of the same
    /// input: matches of the same rule on the same rank collapse into one
    /// finding.
    pub(crate) fn merge(&mut self, other: FindingTable) {
        self.unread.merge(other.unread);
        extend_capped(&mut self.stack_dumps, other.stack_dumps, MAX_STACK_DUMPS);
        self.flight_records.extend(other.flight_records);
        extend_capped(&mut self.desyncs, other.desyncs, MAX_STACK_DUMPS);
        extend_capped(
            &mut self.stall_reports,
            other.stall_reports,
            MAX_STALL_REPORTS,
        );
        if self.entries.is_empty() {
            // Nothing to collapse into: the other table's findings and
            // index are taken whole rather than copied one by one.
            self.entries = other.entries;
            self.index = other.index;
            self.with_context = other.with_context;
            return;
        }
        for entry in other.entries {
            let key = entry.key();
            match self.index.get(&key) {
                Some(&at) => {
                    let mine = &mut self.entries[at];
                    mine.count += entry.count;
                    if mine.first.input == entry.first.input {
                        mine.last = mine.last.max(entry.last);
                    }
                    if mine.host.is_none() {
                        mine.host = entry.host;
                    }
                    let room = MAX_EVIDENCE.saturating_sub(mine.evidence.len());
                    mine.evidence.extend(entry.evidence.into_iter().take(room));
                }
                None => {
                    self.index.insert(key, self.entries.len());
                    self.entries.push(entry);
                }
            }
        }
    }

    /// Records one match. Returns the slot of a new evidence entry, whose
    /// context the caller completes.
    pub(crate) fn record(
        &mut self,
        m: Match,
        input: &str,
        input_rank: Option<u32>,
        before: impl FnOnce(u64) -> Context,
    ) -> Option<EvidenceSlot> {
        let rank = captured_rank(&m.captures).or(m.line_rank).or(input_rank);
        let anchor = m.lines.first()?;
        let unprefixed = strip_rank_prefix(&anchor.text).rest;
        let host = captured_host(&m.captures)
            .or_else(|| line_host(unprefixed))
            .or_else(|| line_host(&anchor.text))
            .map(str::to_owned);
        let gpu = captured_gpu(&m.captures);
        let printer = nccl_process(unprefixed).map(|p| Printer {
            pid: p.pid,
            device: p.device,
        });
        let key = key(
            m.rule,
            rank,
            host.as_ref(),
            gpu.as_ref(),
            printer,
            captured_nranks(&m.captures),
        );
        let at = match self.index.get(&key) {
            Some(&i) => {
                let entry = &mut self.entries[i];
                if entry.host.is_none() {
                    entry.host = host;
                }
                i
            }
            None => {
                // The line's time, and the program's own after a prefix
                // with a time of its own: it parts lines the prefix's stamp
                // puts at one moment.
                let (stamp, own_time) = (line_time(&anchor.text), line_time(unprefixed));
                self.entries.push(Entry {
                    rule: m.rule,
                    rank,
                    host,
                    gpu,
                    count: 0,
                    first: Location {
                        input: input.to_owned(),
                        line: anchor.number,
                        byte_offset: anchor.offset,
                        time: stamp.or(own_time).map(|t| t.display()),
                        own_time: stamp.and(own_time).map(|t| t.display()),
                    },
                    last: anchor.number,
                    order: (self.input, anchor.number),
                    // Sized for this match's lines: most findings keep one.
                    evidence: Vec::with_capacity(m.lines.len().min(MAX_EVIDENCE)),
                    // A capture is input text: it fills messages.
                    captures: m
                        .captures
                        .iter()
                        .map(|(k, v)| (k.clone(), inert_capped(v, MAX_CAPTURE_CHARS)))
                        .collect(),
                    traceback: None,
                    curve: None,
                    printed_by: printer,
                });
                self.index.insert(key, self.entries.len() - 1);
                self.entries.len() - 1
            }
        };
        let entry = &mut self.entries[at];
        entry.count += 1;
        if entry.first.input == input {
            let end = m.lines.last().map_or(anchor.number, |l| l.number);
            entry.last = entry.last.max(end);
        }
        if entry.evidence.len() >= MAX_EVIDENCE {
            return None;
        }
        let first_evidence = entry.evidence.is_empty();
        let mut context = first_evidence.then(|| before(anchor.number));
        if let Some(c) = &mut context {
            c.span = anchor.span.map(|span| inert_span(&anchor.text, span));
        }
        let slot = (at, entry.evidence.len());
        for (k, line) in m.lines.iter().enumerate() {
            if entry.evidence.len() >= MAX_EVIDENCE {
                break;
            }
            entry.evidence.push(Evidence {
                input: input.to_owned(),
                line: line.number,
                text: inert_capped(&line.text, MAX_EVIDENCE_CHARS),
                context: if k == 0 { context.take() } else { None },
            });
        }
        if first_evidence && self.limits_context {
            self.limit_context(at);
        }
        first_evidence.then_some(slot)
    }

    /// Counts the finding at `at`, whose evidence was just given its
    /// surrounding lines, among those of its rule that keep them; past
    /// [`CONTEXT_PER_RULE`], the last of them in order lets them go. Only
    /// what the report would drop is dropped: the findings counted sort
    /// before it here and, since this table's line numbers are only ever
    /// moved all together, in the incident too.
    fn limit_context(&mut self, at: usize) {
        let Some(entry) = self.entries.get(at) else {
            return;
        };
        let kept = self.with_context.entry(entry.rule).or_default();
        kept.push((entry.order, at));
        if kept.len() <= CONTEXT_PER_RULE {
            return;
        }
        let last = kept.pop().and_then(|(_, last)| self.entries.get_mut(last));
        for ev in last.into_iter().flat_map(|e| &mut e.evidence) {
            ev.context = None;
        }
    }

    /// Adds a line after the evidence in `slot`; returns whether it wants
    /// more.
    pub(crate) fn add_after(&mut self, slot: EvidenceSlot, text: &str, wanted: usize) -> bool {
        let Some(ctx) = self
            .entries
            .get_mut(slot.0)
            .and_then(|e| e.evidence.get_mut(slot.1))
            .and_then(|ev| ev.context.as_mut())
        else {
            return false;
        };
        ctx.after.push(inert_capped(text, MAX_EVIDENCE_CHARS));
        ctx.after.len() < wanted
    }

    /// Keeps the findings for which `keep(rule, input, last)` holds: the
    /// index of the finding's rule, the input it was first seen in and the
    /// last line of its matches there.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(usize, &str, u64) -> bool) {
        self.entries
            .retain(|e| keep(e.rule, &e.first.input, e.last));
        self.index = self
            .entries
            .iter()
            .enumerate()
            .map(|(at, e)| (e.key(), at))
            .collect();
        self.with_context.clear();
    }

    /// The findings, in the order they were first seen. Past the first
    /// [`CONTEXT_PER_RULE`] findings of a rule, the evidence keeps no
    /// surrounding lines: a rule that fires on every one of 100 000 ranks
    /// then costs a line per rank, not five.
    pub(crate) fn into_findings(mut self, rules: &RuleSet) -> Vec<Finding> {
        self.index = HashMap::new();
        self.entries.sort_by_key(|e| e.order);
        // The surrounding lines are let go before the findings are made,
        // so that the two are not held at once.
        let mut per_rule: HashMap<usize, usize> = HashMap::new();
        for e in &mut self.entries {
            let seen = per_rule.entry(e.rule).or_default();
            *seen += 1;
            if *seen > CONTEXT_PER_RULE {
                for ev in &mut e.evidence {
                    ev.context = None;
                }
            }
            e.evidence.shrink_to_fit();
        }
        let mut findings = Vec::with_capacity(self.entries.len());
        for e in std::mem::take(&mut self.entries) {
            findings.extend(e.into_finding(rules));
        }
        findings
    }

    /// The findings as comparable text: rule, rank, count, the lines of
    /// the first location and of every evidence line, and the exception
    /// lines and frame counts of the traceback.
    #[cfg(test)]
    pub(crate) fn digest(self, rules: &RuleSet) -> Vec<String> {
        self.into_findings(rules)
            .iter()
            .map(|f| {
                let lines: Vec<u64> = f.evidence.iter().map(|e| e.line).collect();
                let traceback: Vec<(u64, usize)> = f
                    .traceback
                    .iter()
                    .flat_map(|t| &t.exceptions)
                    .map(|e| (e.line, e.frames.len()))
                    .collect();
                format!(
                    "{} {:?} x{} @{} {lines:?} {:?} {traceback:?}",
                    f.rule, f.rank, f.count, f.first_seen.line, f.captures
                )
            })
            .collect()
    }

    /// The finding at `at` as it stands now.
    pub(crate) fn snapshot(&self, at: usize, rules: &RuleSet) -> Option<Finding> {
        self.entries.get(at).cloned()?.into_finding(rules)
    }

    /// The findings of rule `id` as they stand now, with the position of
    /// the input each was first seen in.
    pub(crate) fn findings_of(&self, id: &str, rules: &RuleSet) -> Vec<(usize, Finding)> {
        let Some(rule) = rules.position(id) else {
            return Vec::new();
        };
        self.entries
            .iter()
            .filter(|e| e.rule == rule)
            .filter_map(|e| Some((e.order.0, e.clone().into_finding(rules)?)))
            .collect()
    }
}

impl Entry {
    fn key(&self) -> Key {
        key(
            self.rule,
            self.rank,
            self.host.as_ref(),
            self.gpu.as_ref(),
            self.printed_by,
            captured_nranks(&self.captures),
        )
    }

    fn into_finding(self, rules: &RuleSet) -> Option<Finding> {
        let rule = rules.rules().get(self.rule)?;
        Some(Finding {
            rule: rule.id.clone(),
            category: rule.category,
            severity: rule.severity,
            role: rule.role,
            title: rule.title.clone(),
            message: rule.render_message(&self.captures),
            count: self.count,
            first_seen: self.first,
            evidence: self.evidence,
            captures: self.captures.into_iter().collect(),
            rank: self.rank,
            ranks: Vec::new(),
            host: self.host,
            gpu: self.gpu,
            action: Some(rule.action),
            remediation: rule.remediation.clone(),
            references: rule.references.clone(),
            explained_by: None,
            traceback: self.traceback,
            curve: self.curve,
            printed_by: self.printed_by,
        })
    }
}

/// The node a match names: a capture `host` (or `node`) that is a host
/// name.
fn captured_host(captures: &[(String, String)]) -> Option<&str> {
    captures
        .iter()
        .find(|(k, v)| (k == "host" || k == "node") && is_host_name(v))
        .map(|(_, v)| v.as_str())
}

/// The GPU a match names: its PCI address from a capture `gpu` or `pci`,
/// or NCCL's `busid`; else its index (`GPU 0`) from a capture
/// `gpu_index`.
fn captured_gpu(captures: &[(String, String)]) -> Option<String> {
    captures.iter().find_map(|(k, v)| match k.as_str() {
        "gpu" | "pci" => crate::devices::pci_address(v),
        "busid" => crate::devices::nccl_address(v),
        "gpu_index" => v.parse::<u32>().ok().map(|i| format!("GPU {i}")),
        _ => None,
    })
}

/// The rank a match names: a capture `rank`, or else the one rank missing
/// from a capture `ready_ranks`, the ranks that reached a collective the
/// others wait in (`[ready ranks: 4, 6, 7, 1, 5, 3, 2]` names rank 0).
/// Only a single gap below the highest listed rank names a rank: a rank
/// above it, or several missing, are not known from the list.
fn captured_rank(captures: &[(String, String)]) -> Option<u32> {
    let get = |name: &str| captures.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    if let Some(rank) = get("rank").and_then(|v| v.parse().ok()) {
        return Some(rank);
    }
    let mut ready: Vec<u32> = get("ready_ranks")?
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    ready.sort_unstable();
    ready.dedup();
    let mut missing = (0..=*ready.last()?).filter(|r| ready.binary_search(r).is_err());
    match (missing.next(), missing.next()) {
        (Some(rank), None) => Some(rank),
        _ => None,
    }
}

/// `span`, a byte range of `text`, as a range of `inert(text)`.
fn inert_span(text: &str, (start, end): (usize, usize)) -> (usize, usize) {
    let len = |s: Option<&str>| s.map_or(0, |s| inert(s).len());
    let start2 = len(text.get(..start));
    (start2, start2 + len(text.get(start..end)))
}

#[cfg(test)]
mod tests {
    use super::captured_rank;

    fn caps(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_rank_missing_from_the_ready_ones() {
        assert_eq!(
            captured_rank(&caps(&[("ready_ranks", "4, 6, 7, 1, 5, 3, 2")])),
            Some(0)
        );
        assert_eq!(captured_rank(&caps(&[("ready_ranks", "0, 1, 3")])), Some(2));
        // Two missing, or none below the highest: not known.
        assert_eq!(captured_rank(&caps(&[("ready_ranks", "0, 3")])), None);
        assert_eq!(captured_rank(&caps(&[("ready_ranks", "0, 1, 2")])), None);
        assert_eq!(captured_rank(&caps(&[("ready_ranks", "x, 1")])), None);
        assert_eq!(
            captured_rank(&caps(&[("rank", "5"), ("ready_ranks", "1, 2")])),
            Some(5)
        );
    }
}

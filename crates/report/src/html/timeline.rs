//! The incident as an SVG timeline: one lane per rank (per host when no
//! finding names a rank), each finding a marker in the lanes of the ranks
//! it was seen on, in the order things happened, the root cause marked,
//! every consequence linked to its cause, and each rank's last progress
//! (the collectives it had issued and completed, or its last collective)
//! at the end of its lane.
//!
//! Findings are placed in columns by time when every one of them has a
//! time (its own, or that of the nearest line before it in its input that
//! had one), else by how far through its input it was seen: equal steps,
//! not a scale, so that a burst of findings within a millisecond stays
//! readable next to a minute of silence.

use super::text;
use coroner_model::{Finding, Report, Role, Severity};
use maud::{html, Markup};
use std::collections::{BTreeMap, BTreeSet};

const WIDTH: f64 = 1100.0;
const LABEL: f64 = 92.0;
const PROGRESS: f64 = 210.0;
const LANE: f64 = 26.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 18.0;
/// The most lanes drawn.
const MAX_LANES: usize = 64;
/// The most findings placed.
const MAX_EVENTS: usize = 150;

/// A lane: a rank, a host, or the findings that name neither.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Lane {
    Rank(u32),
    Host(String),
    Unplaced,
}

impl Lane {
    fn label(&self, by: By) -> String {
        match (self, by) {
            (Lane::Rank(r), _) => format!("rank {r}"),
            (Lane::Host(h), _) => text(h, 14),
            (Lane::Unplaced, By::Rank) => "no rank".to_owned(),
            (Lane::Unplaced, By::Host) => "no host".to_owned(),
            (Lane::Unplaced, By::Job) => "job".to_owned(),
        }
    }
}

/// What the lanes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Host,
    Job,
}

/// One finding, where it goes.
struct Event<'a> {
    index: usize,
    finding: &'a Finding,
    lanes: Vec<Lane>,
    column: usize,
}

pub(super) fn render(report: &Report) -> Markup {
    // One finding is not a sequence.
    if report.findings.len() < 2 {
        return html! {};
    }
    let by_rank = report
        .findings
        .iter()
        .any(|f| f.rank.is_some() || !f.ranks.is_empty())
        || report.inputs.iter().any(|i| i.rank.is_some());
    let by_host = !by_rank && report.findings.iter().any(|f| f.host.is_some());
    let by = if by_rank {
        By::Rank
    } else if by_host {
        By::Host
    } else {
        By::Job
    };
    let lanes_of = |f: &Finding| -> Vec<Lane> {
        if by_rank {
            let mut ranks: BTreeSet<u32> = f.ranks.iter().copied().collect();
            ranks.extend(f.rank);
            if ranks.is_empty() {
                vec![Lane::Unplaced]
            } else {
                ranks.into_iter().map(Lane::Rank).collect()
            }
        } else if by_host {
            vec![f.host.clone().map_or(Lane::Unplaced, Lane::Host)]
        } else {
            vec![Lane::Unplaced]
        }
    };

    // The findings placed: the root cause, then causes, symptoms and
    // context, up to MAX_EVENTS.
    let root = crate::root_finding(report);
    let mut chosen: Vec<usize> = (0..report.findings.len()).collect();
    chosen.sort_by_key(|&i| {
        let f = &report.findings[i];
        let is_root = root.is_some_and(|r| std::ptr::eq(r, f));
        (!is_root, role_order(f.role), i)
    });
    let not_placed = chosen.len().saturating_sub(MAX_EVENTS);
    chosen.truncate(MAX_EVENTS);

    let (order, by_time) = ordering(report);
    chosen.sort_by(|&a, &b| {
        order[a]
            .partial_cmp(&order[b])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    let mut events: Vec<Event> = Vec::with_capacity(chosen.len());
    let mut column = 0usize;
    let mut previous: Option<f64> = None;
    for &i in &chosen {
        if previous.is_some_and(|p| p != order[i]) {
            column += 1;
        }
        previous = Some(order[i]);
        let f = &report.findings[i];
        events.push(Event {
            index: i,
            finding: f,
            lanes: lanes_of(f),
            column,
        });
    }
    let columns = column + 1;

    // Lanes: every rank an input or a finding names, the root cause's
    // first; at most MAX_LANES.
    let mut all: BTreeSet<Lane> = events
        .iter()
        .flat_map(|e| e.lanes.iter().cloned())
        .collect();
    if by_rank {
        all.extend(report.inputs.iter().filter_map(|i| i.rank).map(Lane::Rank));
    }
    let total_lanes = all.len();
    let mut lanes: Vec<Lane> = Vec::new();
    if let Some(rank) = report.root_cause.rank.filter(|_| by_rank) {
        lanes.push(Lane::Rank(rank));
    }
    for lane in all {
        if lanes.len() >= MAX_LANES {
            break;
        }
        if !lanes.contains(&lane) {
            lanes.push(lane);
        }
    }
    lanes.sort();
    let lane_at: BTreeMap<&Lane, usize> = lanes.iter().enumerate().map(|(i, l)| (l, i)).collect();

    // Each lane's last progress, from the captures a rule names
    // `enqueued`/`completed` or `seq`/`state`.
    let mut progress: BTreeMap<usize, (u8, String)> = BTreeMap::new();
    for e in &events {
        if let Some((rank, said)) = progress_of(e.finding) {
            for lane in &e.lanes {
                if let Some(&at) = lane_at.get(lane) {
                    let entry = progress.entry(at).or_insert((u8::MAX, String::new()));
                    if rank < entry.0 {
                        *entry = (rank, said.clone());
                    }
                }
            }
        }
    }
    let right = if progress.is_empty() { 20.0 } else { PROGRESS };
    let plot = WIDTH - LABEL - right;
    let step = plot / columns.max(1) as f64;
    let x = |column: usize| LABEL + step * (column as f64 + 0.5);
    let y = |lane: usize| TOP + LANE * lane as f64 + LANE / 2.0;
    let height = TOP + LANE * lanes.len() as f64 + BOTTOM;

    // Where each placed finding's first marker is, for the links.
    let mut first_marker: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
    for e in &events {
        if let Some(&lane) = e.lanes.iter().find_map(|l| lane_at.get(l)) {
            first_marker.insert(e.index, (x(e.column), y(lane)));
        }
    }
    let cause_of = |rule: &str| -> Option<(f64, f64)> {
        let root_index = root.and_then(|r| report.findings.iter().position(|f| std::ptr::eq(f, r)));
        root_index
            .filter(|&i| report.findings[i].rule == rule)
            .or_else(|| {
                events
                    .iter()
                    .find(|e| e.finding.rule == rule)
                    .map(|e| e.index)
            })
            .and_then(|i| first_marker.get(&i).copied())
    };
    let links: Vec<((f64, f64), (f64, f64))> = events
        .iter()
        .filter_map(|e| {
            let cause = cause_of(e.finding.explained_by.as_deref()?)?;
            let me = first_marker.get(&e.index)?;
            Some((cause, *me))
        })
        .collect();
    let first_time = events
        .iter()
        .find_map(|e| e.finding.first_seen.time.as_deref());
    let last_time = events
        .iter()
        .rev()
        .find_map(|e| e.finding.first_seen.time.as_deref());
    let axis = if by_time {
        "in time order"
    } else {
        "in the order each input shows them"
    };

    html! {
        section #timeline {
            h2 { "Timeline" }
            figure.figure {
                figcaption {
                    (events.len()) " finding(s) on " (lanes.len()) " lane(s), " (axis)
                    @if by_time {
                        @if let (Some(a), Some(b)) = (first_time, last_time) { ", from " (text(&crate::readable_time(a), 40)) " to " (text(&crate::readable_time(b), 40)) }
                    }
                    ". Hover a marker for its message."
                }
                svg viewBox=(format!("0 0 {WIDTH} {height:.0}")) role="img" aria-label="timeline of the findings per rank" {
                    defs {
                        marker #arrow viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                            path d="M0,0 L8,4 L0,8 z" fill="currentColor" {}
                        }
                    }
                    text.small x=(LABEL) y="16" { "earlier" }
                    text.small x=(LABEL + plot) y="16" text-anchor="end" { "later →" }
                    @if !progress.is_empty() {
                        text.small x=(LABEL + plot + 12.0) y="16" { "last progress" }
                    }
                    @for (i, lane) in lanes.iter().enumerate() {
                        @let is_root_lane = by_rank && report.root_cause.rank.is_some_and(|r| *lane == Lane::Rank(r));
                        g.lane-row data-lane=(lane.label(by)) data-root=[is_root_lane.then_some("true")] {
                            rect class=(if is_root_lane { "lane root-lane" } else { "lane" }) x=(LABEL) y=(px(TOP + LANE * i as f64 + 2.0)) width=(px(plot)) height=(px(LANE - 4.0)) rx="3" {}
                            text class=(if is_root_lane { "lane-label root-label" } else { "lane-label" }) x=(LABEL - 8.0) y=(px(y(i) + 4.0)) text-anchor="end" { (lane.label(by)) }
                            @if let Some((_, said)) = progress.get(&i) {
                                text.progress x=(px(LABEL + plot + 12.0)) y=(px(y(i) + 4.0)) { (said) }
                            }
                        }
                    }
                    @for ((x1, y1), (x2, y2)) in &links {
                        path.link d=(link_path(*x1, *y1, *x2, *y2)) marker-end="url(#arrow)" {}
                    }
                    @for e in &events {
                        @for lane in &e.lanes {
                            @if let Some(&at) = lane_at.get(lane) {
                                (marker(e, x(e.column), y(at), root.is_some_and(|r| std::ptr::eq(r, e.finding))))
                            }
                        }
                    }
                }
                div.legend {
                    span.l-root { "root cause" }
                    span.l-cause { "cause" }
                    span.l-symptom { "symptom (a consequence)" }
                    span.l-context { "context" }
                    span.l-link { "explained by (from cause to consequence)" }
                }
                @if not_placed > 0 {
                    p.cap { (not_placed) " less important finding(s) not placed." }
                }
                @if total_lanes > lanes.len() {
                    p.cap { (total_lanes - lanes.len()) " more lane(s) not drawn: the timeline shows " (MAX_LANES) "." }
                }
            }
        }
    }
}

fn marker(e: &Event, x: f64, y: f64, is_root: bool) -> Markup {
    let f = e.finding;
    let severity = match f.severity {
        Severity::Error | Severity::Critical => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    };
    let (class, r) = match f.role {
        _ if is_root => (format!("marker m-{severity}"), 7.0),
        Role::Cause => (format!("marker m-{severity}"), 5.5),
        Role::Symptom => (format!("marker m-symptom m-{severity}"), 5.0),
        Role::Context => ("marker m-context".to_owned(), 3.5),
    };
    let time = f
        .first_seen
        .time
        .as_deref()
        .map(|t| format!(" at {}", text(&crate::readable_time(t), 40)))
        .unwrap_or_default();
    let tip = format!(
        "{} ({}, {}){time}\n{}:{}\n{}",
        text(&f.rule, 120),
        f.category.as_str(),
        f.role.as_str(),
        text(&f.first_seen.input, 200),
        f.first_seen.line,
        text(&f.message, 300)
    );
    html! {
        g data-rule=(text(&f.rule, 120)) data-role=(if is_root { "root" } else { f.role.as_str() }) {
            title { (tip) }
            @if is_root {
                circle.root-halo cx=(px(x)) cy=(px(y)) r="11" {}
            }
            circle class=(class) cx=(px(x)) cy=(px(y)) r=(r) {}
        }
    }
}

/// A lane's last progress as a finding's captures say it, best first:
/// `issued 20, completed 19` (captures `enqueued` and `completed`), then
/// `collective 20 scheduled` (`seq` and `state`), then `collective 20`.
fn progress_of(f: &Finding) -> Option<(u8, String)> {
    let get = |name: &str| f.captures.get(name).map(|v| text(v, 24));
    match (get("enqueued"), get("completed"), get("seq"), get("state")) {
        (Some(issued), Some(done), _, _) => Some((0, format!("issued {issued}, completed {done}"))),
        (_, _, Some(seq), Some(state)) => Some((1, format!("collective {seq} {state}"))),
        (_, _, Some(seq), None) => Some((2, format!("collective {seq}"))),
        _ => None,
    }
}

/// A curve from a cause's marker to a consequence's.
fn link_path(x1: f64, y1: f64, x2: f64, y2: f64) -> String {
    let bend = ((x2 - x1).abs() * 0.35).max(18.0);
    format!(
        "M{:.1},{:.1} C{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
        x1,
        y1,
        x1 + bend,
        y1,
        x2 - bend,
        y2,
        x2,
        y2
    )
}

fn role_order(role: Role) -> u8 {
    match role {
        Role::Cause => 0,
        Role::Symptom => 1,
        Role::Context => 2,
    }
}

/// Each finding's place in the order of events, and whether that order is
/// by time. By time when every finding has one (its own or that of the
/// nearest earlier line of its input with one, else the nearest later);
/// else by the share of its input read before it.
fn ordering(report: &Report) -> (Vec<f64>, bool) {
    let n = report.findings.len();
    let mut times: Vec<Option<String>> = vec![None; n];
    let mut by_input: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, f) in report.findings.iter().enumerate() {
        by_input
            .entry(f.first_seen.input.as_str())
            .or_default()
            .push(i);
    }
    for members in by_input.values_mut() {
        members.sort_by_key(|&i| report.findings[i].first_seen.line);
        let mut last: Option<String> = None;
        for &i in members.iter() {
            let own = report.findings[i]
                .first_seen
                .time_of_year()
                .map(str::to_owned);
            if own.is_some() {
                last.clone_from(&own);
            }
            times[i] = own.or_else(|| last.clone());
        }
        let mut next: Option<String> = None;
        for &i in members.iter().rev() {
            if times[i].is_some() {
                next.clone_from(&times[i]);
            } else {
                times[i].clone_from(&next);
            }
        }
    }
    if times.iter().all(Option::is_some) {
        let mut sorted: Vec<&str> = times.iter().flatten().map(String::as_str).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let order = times
            .iter()
            .map(|t| {
                let t = t.as_deref().unwrap_or_default();
                sorted.binary_search(&t).unwrap_or(0) as f64
            })
            .collect();
        return (order, true);
    }
    let lines: BTreeMap<&str, u64> = report
        .inputs
        .iter()
        .map(|i| (i.path.as_str(), i.lines))
        .collect();
    let order = report
        .findings
        .iter()
        .map(|f| {
            let total = lines.get(f.first_seen.input.as_str()).copied().unwrap_or(0);
            if total == 0 {
                0.0
            } else {
                f.first_seen.line as f64 / total as f64
            }
        })
        .collect();
    (order, false)
}

fn px(v: f64) -> String {
    format!("{v:.1}")
}

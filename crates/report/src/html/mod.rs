//! The incident report as one self-contained HTML page: the verdict, its
//! evidence, the curves behind a trend, a timeline with a lane per rank,
//! the other findings, what cores and memory snapshots show, and what was
//! read.
//!
//! Everything is inline (CSS, SVG and a small script that sorts the
//! findings table); the page's Content-Security-Policy allows no fetch of
//! any kind and no script but that one, whose hash it names. The page
//! reads the same with scripts disabled. Every string that came from an
//! input is escaped by the template engine (`maud`) and capped in length;
//! lists are capped so that a large incident stays near [`BUDGET`] bytes,
//! and the page says what it left out.

mod chart;
mod memory;
mod timeline;

use crate::{one_line, root_finding};
use coroner_model::{inert_capped, Category, Evidence, Finding, Report, Severity};
use maud::{html, Markup, PreEscaped, DOCTYPE};

const STYLE: &str = include_str!("style.css");
const SORT_SCRIPT: &str = include_str!("sort.js");
/// `sha256-` and the base64 of the SHA-256 of [`SORT_SCRIPT`], for the
/// Content-Security-Policy (a test checks it).
const SORT_SCRIPT_HASH: &str = "sha256-OMiyoz2AlLNVZro64b3Qm2JyMRoEywbQLvq8SRc9T9M=";

/// About how large a page may grow; lists are cut to keep it near this.
pub const BUDGET: usize = 1 << 20;
/// Rows of the findings table.
const MAX_ROWS: usize = 400;
/// Evidence lines of the root cause.
const MAX_EVIDENCE: usize = 40;
/// Characters of one line of log text.
const MAX_LINE: usize = 1_000;
/// Characters of a finding's message in the table.
const MAX_MESSAGE: usize = 400;
/// Curves drawn.
const MAX_CURVES: usize = 12;

/// Renders `report` as one HTML page.
pub fn render(report: &Report) -> String {
    let root = &report.root_cause;
    let primary = root_finding(report);
    let title = if root.category == Category::Unknown {
        "coroner: no root cause found".to_owned()
    } else {
        let rank = crate::root_rank(root)
            .map(|r| format!(" on {r}"))
            .unwrap_or_default();
        format!("coroner: {}{rank}", root.category)
    };
    let csp = format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src '{SORT_SCRIPT_HASH}'; base-uri 'none'; form-action 'none'"
    );
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(csp);
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                meta name="generator" content=(format!("{} {}", report.tool.name, report.tool.version));
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                main {
                    (verdict(report, primary))
                    (evidence(report))
                    (curves(report, primary))
                    (timeline::render(report))
                    (traceback(primary))
                    (remediation(report))
                    (unread(report))
                    (findings(report))
                    (memory::render(report))
                    (cores(report))
                    (inputs(report))
                    footer {
                        "Made by " (report.tool.name) " " (report.tool.version)
                        " from " (report.input_count()) " input(s), "
                        (report.stats.lines) " lines, offline: this page loads nothing."
                    }
                }
                script { (PreEscaped(SORT_SCRIPT)) }
            }
        }
    };
    page.into_string()
}

/// Text from an input as the page shows it: on one line, capped.
fn text(s: &str, max: usize) -> String {
    inert_capped(&one_line(s), max)
}

/// Lines of text (a traceback, a core dump's summary) as the page shows
/// them: each line made inert, the whole capped at `max` characters.
fn block(s: &str, max: usize) -> String {
    let lines: Vec<String> = s
        .lines()
        .map(|l| coroner_model::inert(l).into_owned())
        .collect();
    coroner_model::cap_chars(&lines.join("\n"), max)
}

/// A log line as the page shows it: its own spacing kept, capped.
fn log_line(s: &str) -> String {
    inert_capped(s, MAX_LINE)
}

fn severity_class(severity: Option<Severity>) -> &'static str {
    match severity {
        Some(Severity::Error | Severity::Critical) => "error",
        Some(Severity::Warning) => "warning",
        _ => "info",
    }
}

fn at(e: &Evidence) -> String {
    format!("{}:{}", text(&e.input, 300), e.line)
}

fn verdict(report: &Report, primary: Option<&Finding>) -> Markup {
    let root = &report.root_cause;
    let unknown = root.category == Category::Unknown;
    let class = if unknown {
        "verdict unknown".to_owned()
    } else {
        format!("verdict {}", severity_class(root.severity))
    };
    let time = primary.and_then(|f| f.first_seen.time.as_deref());
    let host = root
        .host
        .clone()
        .or_else(|| primary.and_then(|f| f.host.clone()));
    let ranks = primary.filter(|f| f.ranks.len() > 1).map(|f| {
        format!(
            "seen on {} ranks: {}",
            f.ranks.len(),
            crate::rank_ranges(&f.ranks)
        )
    });
    html! {
        header class=(class) id="verdict" {
            p.kicker { @if unknown { "No root cause found" } @else { "Root cause" } }
            h1 {
                (root.category.as_str())
                @if let Some(rank) = crate::root_rank(root) {
                    " " span.where { "on " (rank) }
                }
            }
            p.summary { (text(&root.summary, 2_000)) }
            dl.facts {
                @if let Some(c) = root.confidence {
                    div { dt { "Confidence" } dd class=(format!("conf-{}", c.as_str())) { (c.as_str()) } }
                }
                @if let Some(rank) = root.rank {
                    div { dt { "Rank" } dd { (rank) @if root.rank_presumed { " (presumed)" } } }
                }
                @if let Some(host) = &host {
                    div { dt { "Host" } dd { (text(host, 200)) } }
                }
                @if let Some(gpu) = &root.gpu {
                    div { dt { "GPU" } dd { (text(gpu, 100)) } }
                }
                @if let Some(time) = time {
                    div { dt { "First seen" } dd { (text(time, 60)) } }
                }
                @if let Some(rule) = &root.rule {
                    div { dt { "Rule" } dd.mono { (text(rule, 200)) } }
                }
                @if let Some(action) = &root.action {
                    div { dt { "Action" } dd { (action.kind.as_str()) } }
                    @if !action.hosts.is_empty() {
                        div { dt { "Nodes" } dd { (text(&action.hosts.join(", "), 400)) } }
                    }
                }
                @if let Some(ranks) = ranks {
                    div { dt { "Ranks" } dd { (ranks) } }
                }
            }
            @if let Some(next) = crate::next_step(root) {
                p.next { strong { "Next: " } (text(&next, 1_000)) "." }
            }
        }
    }
}

fn evidence(report: &Report) -> Markup {
    let lines = &report.root_cause.evidence;
    if lines.is_empty() {
        return html! {};
    }
    let shown = &lines[..lines.len().min(MAX_EVIDENCE)];
    html! {
        section #evidence {
            h2 { "Evidence" }
            table.evidence {
                tbody {
                    @for e in shown {
                        tr { td.at.mono { (at(e)) } td.text.mono { (log_line(&e.text)) } }
                    }
                }
            }
            @if lines.len() > shown.len() {
                p.cap { (lines.len() - shown.len()) " more evidence line(s) not shown (the JSON report has them all)." }
            }
        }
    }
}

fn curves(report: &Report, primary: Option<&Finding>) -> Markup {
    let mut with_curves: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.curve.as_ref().is_some_and(|c| c.points.len() >= 2))
        .collect();
    // The root cause's curve first.
    with_curves.sort_by_key(|f| !primary.is_some_and(|p| std::ptr::eq(p, *f)));
    if with_curves.is_empty() {
        return html! {};
    }
    let left = with_curves.len().saturating_sub(MAX_CURVES);
    html! {
        section #curves {
            h2 { "Curves" }
            @for f in with_curves.iter().take(MAX_CURVES) {
                @if let Some(curve) = &f.curve {
                    (chart::render(f, curve))
                }
            }
            @if left > 0 {
                p.cap { (left) " more curve(s) not drawn." }
            }
        }
    }
}

fn traceback(primary: Option<&Finding>) -> Markup {
    let Some(finding) = primary else {
        return html! {};
    };
    let Some(tb) = &finding.traceback else {
        return html! {};
    };
    let body = crate::traceback_section::body(tb, usize::MAX);
    let heading = match finding.rank {
        Some(rank) => format!("Python traceback (rank {rank})"),
        None => "Python traceback".to_owned(),
    };
    html! {
        section #traceback {
            details {
                summary { (heading) }
                pre { (block(&body, 40_000)) }
            }
        }
    }
}

fn remediation(report: &Report) -> Markup {
    let steps = &report.root_cause.remediation;
    if steps.is_empty() {
        return html! {};
    }
    html! {
        section #remediation {
            h2 { "What to do" }
            ol.steps {
                @for step in steps { li { (text(step, 2_000)) } }
            }
        }
    }
}

fn unread(report: &Report) -> Markup {
    if report.unread.is_empty() {
        return html! {};
    }
    html! {
        section #unread {
            h2 { "Lines no rule read" }
            p.note { "They look like failures; grouped by template (numbers, paths and ids masked)." }
            table.evidence {
                tbody {
                    @for group in &report.unread {
                        tr {
                            td.at.mono { (group.count) "× first at " (at(&group.first)) }
                            td.text.mono { (log_line(&group.template)) }
                        }
                    }
                }
            }
        }
    }
}

fn findings(report: &Report) -> Markup {
    let others = crate::other_findings(report);
    if others.is_empty() {
        return html! {};
    }
    let shown = &others[..others.len().min(MAX_ROWS)];
    let heading = if root_finding(report).is_some() {
        "Other findings"
    } else {
        "Findings"
    };
    html! {
        section #findings {
            h2 { (heading) " (" (others.len() as u64 + report.findings_omitted) ")" }
            table.findings {
                thead {
                    tr {
                        th data-sort="" { "Severity" }
                        th data-sort="" { "Role" }
                        th data-sort="" { "Category" }
                        th data-sort="" { "Rank" }
                        th data-sort="" { "Count" }
                        th { "What" }
                        th data-sort="" { "Where" }
                    }
                }
                tbody {
                    @for f in shown {
                        tr {
                            td data-key=(Severity::ALL.iter().position(|s| *s == f.severity).unwrap_or(0)) {
                                span class=(format!("sev sev-{}", severity_class(Some(f.severity)))) { (f.severity.as_str()) }
                            }
                            td { span.role { (f.role.as_str()) } }
                            td.mono { (f.category.as_str()) }
                            td.num data-key=(f.rank.map_or(-1, i64::from)) {
                                @if f.ranks.len() > 1 { (crate::rank_ranges(&f.ranks)) }
                                @else if let Some(r) = f.rank { (r) }
                                @else { "–" }
                            }
                            td.num { (f.count) }
                            td.msg {
                                (text(&f.message, MAX_MESSAGE))
                                br;
                                span.mono.explained { (text(&f.rule, 200)) }
                                @if let Some(cause) = &f.explained_by {
                                    " " span.explained { "explained by " code { (text(cause, 200)) } }
                                }
                            }
                            td.mono data-key=(format!("{}:{:012}", f.first_seen.input, f.first_seen.line)) {
                                (text(&f.first_seen.input, 300)) ":" (f.first_seen.line)
                            }
                        }
                    }
                }
            }
            @if others.len() > shown.len() {
                p.cap { (others.len() - shown.len()) " more finding(s) not listed (the JSON report has them all)." }
            }
            @if report.findings_omitted > 0 {
                p.note { (report.findings_omitted) " more finding(s), less severe, were not kept." }
            }
        }
    }
}

fn cores(report: &Report) -> Markup {
    let body = crate::core_section::render(&report.inputs, str::to_owned);
    if body.trim().is_empty() {
        return html! {};
    }
    html! {
        section #cores {
            h2 { "Core dumps" }
            pre { (block(body.trim_matches('\n'), 60_000)) }
        }
    }
}

fn inputs(report: &Report) -> Markup {
    let read: Vec<_> = report
        .inputs
        .iter()
        .filter(|i| i.kind != coroner_model::InputKind::Directory)
        .collect();
    let shown = &read[..read.len().min(MAX_ROWS)];
    html! {
        section #inputs {
            details {
                summary { "Inputs (" (read.len()) ")" }
                table.findings {
                    thead { tr { th { "Path" } th { "Kind" } th { "Rank" } th { "Bytes" } th { "Lines" } th { "Notes" } } }
                    tbody {
                        @for i in shown {
                            tr {
                                td.mono.msg { (text(&i.path, 400)) }
                                td { (i.kind.as_str()) @if let Some(c) = &i.compression { " (" (text(c, 20)) ")" } }
                                td.num { @if let Some(r) = i.rank { (r) } @else { "–" } }
                                td.num { (i.bytes) }
                                td.num { (i.lines) }
                                td.msg {
                                    @for e in &i.errors { span.sev.sev-error { (text(&e.located(), 400)) } br; }
                                    @for n in &i.notes { (text(n, 400)) br; }
                                }
                            }
                        }
                    }
                }
                @if read.len() > shown.len() {
                    p.cap { (read.len() - shown.len()) " more input(s) not listed." }
                }
            }
            @for note in &report.notes {
                p.note { (text(note, 1_000)) }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use coroner_model::{Captures, Location, RootCause, Stats, Tool};
    use sha2::{Digest, Sha256};

    fn base64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn the_policy_names_the_scripts_hash() {
        let digest = Sha256::digest(SORT_SCRIPT.as_bytes());
        assert_eq!(SORT_SCRIPT_HASH, format!("sha256-{}", base64(&digest)));
        assert_eq!(base64(b"ab"), "YWI=");
    }

    fn finding(message: &str, evidence: &str) -> Finding {
        Finding {
            rule: "torch-cuda-out-of-memory".to_owned(),
            category: Category::GpuOom,
            severity: Severity::Error,
            role: coroner_model::Role::Cause,
            title: "t".to_owned(),
            message: message.to_owned(),
            count: 1,
            first_seen: Location {
                input: "<b>rank0.log".to_owned(),
                line: 2,
                byte_offset: 0,
                time: None,
                own_time: None,
            },
            evidence: vec![Evidence {
                input: "<b>rank0.log".to_owned(),
                line: 2,
                text: evidence.to_owned(),
                context: None,
            }],
            captures: Captures::default(),
            rank: Some(0),
            ranks: Vec::new(),
            host: Some("<i>node".to_owned()),
            gpu: None,
            action: None,
            remediation: vec!["a <em>step</em>".to_owned()].into(),
            references: Vec::new().into(),
            explained_by: None,
            traceback: None,
            curve: None,
            printed_by: None,
        }
    }

    fn report(findings: Vec<Finding>) -> Report {
        let first = findings.first().cloned();
        Report {
            schema_version: 1,
            tool: Tool {
                name: "coroner".to_owned(),
                version: "0".to_owned(),
            },
            root_cause: match first {
                Some(f) => RootCause {
                    category: f.category,
                    rule: Some(f.rule.clone()),
                    summary: f.message.clone(),
                    rank: f.rank,
                    rank_presumed: false,
                    evidence: f.evidence.clone(),
                    remediation: f.remediation.to_vec(),
                    severity: Some(f.severity),
                    explains: Vec::new(),
                    confidence: None,
                    action: None,
                    host: f.host.clone(),
                    gpu: None,
                },
                None => RootCause::unknown("nothing"),
            },
            findings,
            inputs: Vec::new(),
            stats: Stats::default(),
            unread: Vec::new(),
            notes: Vec::new(),
            findings_omitted: 0,
        }
    }

    #[test]
    fn text_from_inputs_cannot_become_markup() {
        let hostile = "</title></style></svg><script>alert(1)</script>\"' <img src=x onerror=y> \u{1b}[2J \u{202e}";
        let page = render(&report(vec![
            finding(hostile, hostile),
            finding(hostile, "x"),
        ]));
        assert_eq!(
            page.matches("<script").count(),
            1,
            "only the page's own script"
        );
        assert!(
            !page.contains("<img")
                && !page.contains("<b>")
                && !page.contains("<i>")
                && !page.contains("<em>")
        );
        assert_eq!(
            page.matches("<title>").count(),
            page.matches("</title>").count()
        );
        assert_eq!(page.matches("</style>").count(), 1);
        assert_eq!(page.matches("<svg").count(), page.matches("</svg>").count());
        assert!(page.contains("&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;"));
        assert!(!page.contains('\u{1b}') && !page.contains('\u{202e}'));
        assert!(page.contains("^[[2J") && page.contains("\\u{202e}"));
    }

    #[test]
    fn no_root_cause_says_so() {
        let page = render(&report(Vec::new()));
        assert!(page.contains("No root cause found"));
        assert!(page.contains("<title>coroner: no root cause found</title>"));
        assert!(!page.contains("id=\"timeline\""));
    }

    #[test]
    fn long_lines_and_long_lists_are_cut_and_said_to_be() {
        let long = "x".repeat(100_000);
        let many: Vec<Finding> = (0..2_000)
            .map(|i| {
                let mut f = finding(&format!("message {i} {long}"), &long);
                f.rule = format!("rule-{i}");
                f.rank = Some(i);
                f
            })
            .collect();
        let page = render(&report(many));
        assert!(page.len() < BUDGET, "{} bytes", page.len());
        assert!(page.contains("more finding(s) not listed"));
        assert!(page.contains("more lane(s) not drawn"));
        assert!(page.contains("less important finding(s) not placed"));
    }
}

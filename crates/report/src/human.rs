//! The terminal report.
//!
//! Root cause first (a miette diagnostic showing the evidence line in its
//! context, numbered as in the input, and the Python traceback it ends),
//! then what to do, then the other
//! findings one block each, then what was read.

use crate::snippet::Snippet;
use crate::{diagnostic, Style};
use anstyle::{AnsiColor, Style as Ansi};
use coroner_model::{Category, Finding, Report, Severity};
use miette::{Diagnostic, LabeledSpan, SourceCode};
use std::fmt::{self, Write as _};
use textwrap::core::display_width;

/// Reports of text logs are at most as long as the logs they explain, or
/// one screen for a shorter log.
const SHORTEST_CAP: usize = 20;
/// Findings besides the root cause's listed without `-v`; the rest are
/// counted.
const MAX_LISTED: usize = 50;

/// Renders `report` for a terminal or a log. Unless `style.verbose`, a
/// report of text logs is no longer than the logs (or [`SHORTEST_CAP`]
/// lines): the root cause, its next step and evidence first, the rest cut
/// with a line saying so.
pub fn render(report: &Report, style: Style) -> String {
    let full = render_full(report, style, false);
    let Some(cap) = line_cap(report).filter(|_| !style.verbose) else {
        return full;
    };
    if full.lines().count() <= cap {
        return full;
    }
    let brief = render_full(report, style, true);
    let mut lines: Vec<&str> = brief.lines().collect();
    if lines.len() > cap {
        let cut = lines.len() - (cap - 1);
        lines.truncate(cap - 1);
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        let mut out = lines.join("\n");
        let _ = write!(
            out,
            "\n… {cut} more line(s) of report: `coroner analyze -v` shows everything.\n"
        );
        return out;
    }
    brief
}

/// The most lines a report may have: the lines of its text inputs, when
/// every input read is text; `None` when a dump or core was read.
fn line_cap(report: &Report) -> Option<usize> {
    let read: Vec<_> = report
        .inputs
        .iter()
        .filter(|i| i.errors.is_empty() || i.lines > 0)
        .collect();
    if read.is_empty() || read.iter().any(|i| i.lines == 0) {
        return None;
    }
    let lines: u64 = read.iter().map(|i| i.lines).sum();
    Some(
        usize::try_from(lines)
            .unwrap_or(usize::MAX)
            .max(SHORTEST_CAP),
    )
}

/// The report; `compact` shows the evidence as one line, no traceback
/// and the first two steps only.
fn render_full(report: &Report, style: Style, compact: bool) -> String {
    let mut out = String::new();
    let root = &report.root_cause;
    let paint = Paint(style.color);
    let rank = match (crate::root_rank(root), &root.host) {
        (Some(r), Some(host)) => format!(" on {r} ({host})"),
        (Some(r), None) => format!(" on {r}"),
        (None, Some(host)) => format!(" on {host}"),
        (None, None) => String::new(),
    };
    let primary = crate::root_finding(report);
    let time = primary
        .and_then(|f| f.first_seen.time.as_deref())
        .map(|t| format!(" at {}", crate::readable_time(t)))
        .unwrap_or_default();
    let confidence = root
        .confidence
        .map(|c| format!("(confidence: {})", c.as_str()))
        .unwrap_or_default();
    let plain = format!("Root cause: {}{rank}{time} {confidence}", root.category);
    // The confidence goes on the line of its own when both do not fit.
    let gap = if display_width(&plain) > style.width {
        "\n  "
    } else {
        " "
    };
    let _ = writeln!(
        out,
        "{} {}{rank}{time}{}",
        paint.bold("Root cause:"),
        paint.severity(root.severity, root.category.as_str()),
        if confidence.is_empty() {
            String::new()
        } else {
            format!("{gap}{confidence}")
        }
    );
    wrap_into(&mut out, &root.summary, "  ", "  ", style.width);
    if let Some(seen) = primary.filter(|f| f.ranks.len() > 1) {
        wrap_into(
            &mut out,
            &format!(
                "Seen on {} ranks: {}.",
                seen.ranks.len(),
                crate::rank_ranges(&seen.ranks)
            ),
            "  ",
            "  ",
            style.width,
        );
    }
    if let Some(next) = crate::next_step(root) {
        wrap_into(
            &mut out,
            &format!("{} {next}.", paint.bold("Next:")),
            "  ",
            "    ",
            style.width,
        );
    }
    if let Some(curve) = primary.and_then(|f| f.curve.as_ref()) {
        if let Some(line) = crate::sparkline::line(curve) {
            wrap_into(
                &mut out,
                &format!("{} {line}", paint.bold("Curve:")),
                "  ",
                "    ",
                style.width,
            );
        }
    }
    if let (Some(finding), true) = (primary, compact) {
        write_compact_evidence(&mut out, finding, root, style);
    } else if let Some(finding) = primary {
        out.push('\n');
        out.push_str(&diagnostic::render(
            &FindingDiagnostic::new(finding, style.width),
            style,
        ));
        if let Some(traceback) = &finding.traceback {
            let heading = match finding.rank {
                Some(rank) => format!("Python traceback (rank {rank}):"),
                None => "Python traceback:".to_owned(),
            };
            out.push_str(&crate::traceback_section::render(
                traceback,
                &paint.bold(&heading),
                style.width,
            ));
        }
        if !root.remediation.is_empty() {
            let _ = writeln!(out, "\n{}", paint.bold("What to do:"));
            for (i, step) in root.remediation.iter().enumerate() {
                let first = format!("  {}. ", i + 1);
                let rest = " ".repeat(first.len());
                wrap_into(&mut out, step, &first, &rest, style.width);
            }
        }
    }
    if !report.unread.is_empty() && !compact {
        let _ = writeln!(
            out,
            "\n{}",
            paint.bold("Lines that look like failures, which no rule read (where to look):")
        );
        for group in &report.unread {
            let head = format!("  {:>5}× ", group.count);
            let rest = " ".repeat(display_width(&head));
            wrap_into(&mut out, &group.template, &head, &rest, style.width);
            let at = format!("{}:{}", group.first.input, group.first.line);
            wrap_into(
                &mut out,
                &format!("first at {at}"),
                &rest,
                &rest,
                style.width,
            );
        }
    }
    let others = crate::other_findings(report);
    if !others.is_empty() {
        let all = others.len() as u64 + report.findings_omitted;
        let title = if root.category == Category::Unknown {
            format!("Findings ({all}):")
        } else {
            format!("Other findings ({all}):")
        };
        let _ = writeln!(out, "\n{}", paint.bold(&title));
        let listed = if style.verbose {
            others.len()
        } else {
            others.len().min(MAX_LISTED)
        };
        for f in &others[..listed] {
            write_secondary(&mut out, f, style);
        }
        if listed < others.len() {
            let _ = writeln!(
                out,
                "  … {} more finding(s): `coroner analyze -v` lists them.",
                others.len() - listed
            );
        }
        if report.findings_omitted > 0 {
            let _ = writeln!(
                out,
                "  … {} more finding(s), less severe, not kept: a report keeps the first {}.",
                report.findings_omitted,
                report.findings.len()
            );
        }
    }
    out.push_str(&crate::core_section::render(&report.inputs, |s| {
        paint.bold(s)
    }));
    write_inputs(&mut out, report, style);
    out
}

/// One line announcing a finding as soon as it is seen (following a live
/// input).
pub fn announcement(f: &Finding) -> String {
    let rank = f.rank.map(|r| format!(" rank {r}")).unwrap_or_default();
    format!(
        "coroner: {} {} [{}]{rank} at {}:{}: {}\n",
        f.severity, f.rule, f.category, f.first_seen.input, f.first_seen.line, f.message
    )
}

/// The root cause's evidence line and its first steps, for a short log.
fn write_compact_evidence(
    out: &mut String,
    f: &Finding,
    root: &coroner_model::RootCause,
    style: Style,
) {
    let paint = Paint(style.color);
    if let Some(e) = f.evidence.first() {
        // The line where it is, then its text in at most three lines: the
        // log is short and at hand.
        let _ = writeln!(out, "  {} {}:{}", paint.bold("Evidence:"), e.input, e.line);
        let mut text = String::new();
        wrap_into(
            &mut text,
            e.text.trim(),
            "    ",
            "    ",
            style.width.saturating_sub(2),
        );
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().take(3).enumerate() {
            let more = if i == 2 && lines.len() > 3 {
                " …"
            } else {
                ""
            };
            let _ = writeln!(out, "{line}{more}");
        }
    }
    if !root.remediation.is_empty() {
        let _ = writeln!(out, "\n{}", paint.bold("What to do:"));
        for (i, step) in root.remediation.iter().take(2).enumerate() {
            let first = format!("  {}. ", i + 1);
            let rest = " ".repeat(first.len());
            wrap_into(out, step, &first, &rest, style.width);
        }
        if root.remediation.len() > 2 {
            let _ = writeln!(
                out,
                "  ({} more step(s) with -v)",
                root.remediation.len() - 2
            );
        }
    }
}

/// What a secondary finding is to the incident: a `consequence` of
/// another finding (the cascade explains it), else its role.
fn relation(f: &Finding) -> &'static str {
    if f.explained_by.is_some() {
        "consequence"
    } else {
        f.role.as_str()
    }
}

/// One line: `error nccl-watchdog-timeout ×6 rank 0  consequence  console.log:196`.
/// ` ×6 rank 0`: how often, and where, when there is something to say.
fn count_and_rank(f: &Finding) -> String {
    let count = if f.count > 1 {
        format!(" ×{}", f.count)
    } else {
        String::new()
    };
    format!("{count}{}", crate::where_seen(f))
}

fn write_secondary_line(out: &mut String, f: &Finding, style: Style) {
    let paint = Paint(style.color);
    let head = format!("{}{}  {}", f.rule, count_and_rank(f), relation(f));
    let at = format!("{}:{}", f.first_seen.input, f.first_seen.line);
    let severity = f.severity.as_str();
    // The location on the same line when it fits, else under it.
    let fits =
        2 + severity.len() + 1 + display_width(&head) + 2 + display_width(&at) <= style.width;
    let sep = if fits {
        "  ".to_owned()
    } else {
        "\n      ".to_owned()
    };
    let _ = writeln!(
        out,
        "  {} {head}{sep}{at}",
        paint.severity(Some(f.severity), severity)
    );
}

fn write_secondary(out: &mut String, f: &Finding, style: Style) {
    if !style.verbose {
        write_secondary_line(out, f, style);
        return;
    }
    let paint = Paint(style.color);
    let _ = writeln!(
        out,
        "  {} {} [{}, {}]{}",
        paint.severity(Some(f.severity), f.severity.as_str()),
        f.rule,
        f.category,
        relation(f),
        count_and_rank(f)
    );
    wrap_into(out, &f.message, "      ", "      ", style.width);
    if let Some(line) = f.curve.as_ref().and_then(crate::sparkline::line) {
        wrap_into(
            out,
            &format!("curve: {line}"),
            "      ",
            "        ",
            style.width,
        );
    }
    let _ = writeln!(out, "      at {}:{}", f.first_seen.input, f.first_seen.line);
}

fn write_inputs(out: &mut String, report: &Report, style: Style) {
    let read = report.analysed_inputs();
    let _ = writeln!(
        out,
        "\nRead {read} of {} input(s): {} lines, {}.",
        report.input_count(),
        report.stats.lines,
        human_bytes(report.stats.bytes)
    );
    for note in &report.notes {
        wrap_into(out, note, "  - ", "    ", style.width);
    }
    for input in &report.inputs {
        for e in &input.errors {
            wrap_into(
                out,
                &format!("{}: {}", input.path, e.located()),
                "  ! ",
                "    ",
                style.width,
            );
        }
        for note in &input.notes {
            wrap_into(
                out,
                &format!("{}: {note}", input.path),
                "  - ",
                "    ",
                style.width,
            );
        }
    }
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Appends `text` wrapped to `width` display columns (wide characters
/// count two): its first line after `first`, the others after `rest`; runs
/// of whitespace become one space and a word longer than a line is broken.
pub(crate) fn wrap_into(out: &mut String, text: &str, first: &str, rest: &str, width: usize) {
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.is_empty() {
        out.push_str(first.trim_end());
        out.push('\n');
        return;
    }
    let width = width.max(textwrap::core::display_width(rest) + 10);
    let options = textwrap::Options::new(width)
        .initial_indent(first)
        .subsequent_indent(rest)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .break_words(true);
    for line in textwrap::wrap(&words, options) {
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// ANSI styling, or none.
#[derive(Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn styled(self, style: Ansi, s: &str) -> String {
        if self.0 {
            format!("{style}{s}{style:#}")
        } else {
            s.to_owned()
        }
    }

    fn bold(self, s: &str) -> String {
        self.styled(Ansi::new().bold(), s)
    }

    fn severity(self, severity: Option<Severity>, s: &str) -> String {
        let color = match severity {
            Some(Severity::Critical) => Some(AnsiColor::Magenta),
            Some(Severity::Error) => Some(AnsiColor::Red),
            Some(Severity::Warning) => Some(AnsiColor::Yellow),
            Some(Severity::Info) => Some(AnsiColor::Cyan),
            None => None,
        };
        let style = Ansi::new().bold().fg_color(color.map(Into::into));
        self.styled(style, s)
    }
}

/// A finding shown as a miette diagnostic on its first evidence line.
struct FindingDiagnostic<'a> {
    finding: &'a Finding,
    snippet: Option<Snippet>,
    width: usize,
}

/// Columns miette's line-number gutter takes.
const GUTTER: usize = 8;

impl<'a> FindingDiagnostic<'a> {
    fn new(finding: &'a Finding, width: usize) -> Self {
        let cols = width.saturating_sub(GUTTER).max(20);
        FindingDiagnostic {
            finding,
            snippet: finding.evidence.first().map(|e| Snippet::new(e, cols)),
            width,
        }
    }
}

impl fmt::Debug for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FindingDiagnostic")
            .field("rule", &self.finding.rule)
            .finish()
    }
}

impl fmt::Display for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.finding.title)
    }
}

impl std::error::Error for FindingDiagnostic<'_> {}

impl Diagnostic for FindingDiagnostic<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(&self.finding.rule))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.severity {
            Severity::Critical | Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Info => miette::Severity::Advice,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        let count = self.finding.count;
        (count > 1).then(|| {
            Box::new(format!("matched {count} times; the first is shown"))
                as Box<dyn fmt::Display + 'b>
        })
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.snippet.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let snippet = self.snippet.as_ref()?;
        // The category labels the match when it fits beside the gutter.
        let label = self.finding.category.as_str();
        let fits = GUTTER + snippet.label_column + 4 + label.chars().count() <= self.width;
        Some(Box::new(std::iter::once(
            LabeledSpan::new_primary_with_span(fits.then(|| label.to_owned()), snippet.span),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_respects_width_and_indents() {
        let mut out = String::new();
        wrap_into(&mut out, "aaa bbb ccc ddd", "> ", "  ", 9);
        assert_eq!(out, "> aaa bbb\n  ccc ddd\n");
    }

    #[test]
    fn long_words_are_broken_to_the_width() {
        let mut out = String::new();
        wrap_into(&mut out, "set A=aaaa,bbbb,cccc now", "", "", 12);
        assert_eq!(out, "set\nA=aaaa,bbbb,\ncccc now\n");
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let mut out = String::new();
        let text = "RuntimeError: 显存不足，尝试分配 2.00 GiB 失败 请减小批大小或者使用梯度累积";
        wrap_into(&mut out, text, "  ", "  ", 24);
        for line in out.lines() {
            assert!(display_width(line) <= 24, "{line:?} in {out}");
        }
        assert_eq!(
            out.split_whitespace().collect::<String>(),
            text.split_whitespace().collect::<String>()
        );
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(2048), "2.0 KiB");
    }
}

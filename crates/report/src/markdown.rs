//! A Markdown summary for `$GITHUB_STEP_SUMMARY` and merge-request
//! comments: the root cause as the heading, its summary, the evidence in a
//! fenced block (`file:line: text`), the curve of a trend's metric as a
//! sparkline, the Python traceback it ends (folded),
//! what to do as a numbered list, then a table of the other findings.

use crate::{one_line, root_finding};
use coroner_model::{Category, Report};
use std::fmt::Write as _;

/// The HTML tags the report writes itself (a folded traceback, a footer);
/// no other HTML ever appears in it.
pub const OWN_HTML_TAGS: [&str; 6] = [
    "<details>",
    "<summary>",
    "</summary>",
    "</details>",
    "<sub>",
    "</sub>",
];

/// Renders `report` as GitHub-flavoured Markdown.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let root = &report.root_cause;
    let primary = root_finding(report);
    if root.category == Category::Unknown {
        out.push_str("## coroner: no root cause found (`unknown`)\n\n");
    } else {
        let rank = crate::root_rank(root)
            .map(|r| format!(" on {r}"))
            .unwrap_or_default();
        let rule = root
            .rule
            .as_deref()
            .map(|r| format!(" \u{b7} {}", code_span(r)))
            .unwrap_or_default();
        let confidence = root
            .confidence
            .map(|c| format!(" \u{b7} {} confidence", c.as_str()))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "## coroner: root cause `{}`{rank}{rule}{confidence}\n",
            root.category
        );
    }
    let _ = writeln!(out, "{}\n", inline(&root.summary));
    if let Some(line) = primary
        .and_then(|f| f.curve.as_ref())
        .and_then(crate::sparkline::line)
    {
        let _ = writeln!(out, "**Curve** {}\n", code_span(&line));
    }
    if !root.evidence.is_empty() {
        let lines: Vec<String> = root
            .evidence
            .iter()
            .map(|e| format!("{}:{}: {}", e.input, e.line, e.text))
            .collect();
        let fence = fence_for(&lines);
        out.push_str("**Evidence**\n\n");
        let _ = writeln!(out, "{fence}text");
        for l in &lines {
            let _ = writeln!(out, "{l}");
        }
        let _ = writeln!(out, "{fence}\n");
    }
    if let Some(traceback) = primary.and_then(|f| f.traceback.as_ref()) {
        let text = crate::traceback_section::body(traceback, usize::MAX);
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let fence = fence_for(&lines);
        out.push_str("<details><summary>Python traceback</summary>\n\n");
        let _ = writeln!(out, "{fence}text");
        for l in &lines {
            let _ = writeln!(out, "{l}");
        }
        let _ = writeln!(out, "{fence}\n\n</details>\n");
    }
    if !root.remediation.is_empty() {
        out.push_str("**What to do**\n\n");
        for (i, step) in root.remediation.iter().enumerate() {
            let _ = writeln!(out, "{}. {}", i + 1, inline(step));
        }
        out.push('\n');
    }
    let others = crate::other_findings(report);
    if !others.is_empty() {
        let heading = if primary.is_some() {
            "Other findings"
        } else {
            "Findings"
        };
        let _ = writeln!(out, "**{heading} ({})**\n", others.len());
        out.push_str("| severity | rule | category | count | rank | first location |\n");
        out.push_str("| --- | --- | --- | ---: | ---: | --- |\n");
        for f in others {
            let rank = f.rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                f.severity,
                cell(&format!("`{}`", f.rule)),
                cell(f.category.as_str()),
                f.count,
                rank,
                cell(&format!("{}:{}", f.first_seen.input, f.first_seen.line)),
            );
        }
        out.push('\n');
    }
    let errors: Vec<String> = report
        .inputs
        .iter()
        .flat_map(|i| {
            i.errors
                .iter()
                .map(move |e| format!("- {}: {}", code_span(&i.path), inline(&e.message)))
        })
        .collect();
    if !errors.is_empty() {
        out.push_str("**Inputs not read in full**\n\n");
        for e in errors {
            let _ = writeln!(out, "{e}");
        }
        out.push('\n');
    }
    for note in &report.notes {
        let _ = writeln!(out, "- {}", inline(note));
    }
    if !report.notes.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "<sub>coroner read {} input(s), {} lines.</sub>",
        report.input_count(),
        report.stats.lines
    );
    out
}

/// A table cell: [`inline`] text with `|` escaped in code spans too.
pub fn cell(s: &str) -> String {
    markdown_text(s, true)
}

/// Text for a paragraph or list item, inert in GitHub's Markdown: on one
/// line, code spans (read as CommonMark reads backticks) written again as
/// code spans whose fence is longer than any backtick run in them, and
/// every ASCII punctuation character elsewhere escaped with a backslash.
/// So whatever an input put in it, nothing becomes HTML, a link, an
/// image, emphasis, a heading or a list, and GitHub's autolinks (`www.`,
/// `http://`, addresses) find nothing to link.
pub(crate) fn inline(s: &str) -> String {
    markdown_text(s, false)
}

/// A rule's reference: a link when it is a plain `https://` URL, else
/// [`inline`] text.
pub(crate) fn reference(url: &str) -> String {
    let plain = url.strip_prefix("https://").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=%".contains(c))
    });
    if plain {
        format!("<{url}>")
    } else {
        inline(url)
    }
}

/// `s` as one code span, whatever backticks it holds.
pub fn code_span(s: &str) -> String {
    let mut out = String::new();
    push_code(&mut out, &one_line(s), false);
    out
}

fn markdown_text(s: &str, in_table: bool) -> String {
    let s = one_line(s);
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s.as_str();
    while let Some(c) = rest.chars().next() {
        if c == '`' {
            let run = tick_run(rest);
            if let Some(len) = closing_run(&rest[run..], run) {
                push_code(&mut out, &rest[run..run + len], in_table);
                rest = &rest[run + len + run..];
            } else {
                // No closing run: the backticks are plain text.
                out.push_str(&"\\`".repeat(run));
                rest = &rest[run..];
            }
            continue;
        }
        if acts_in_markdown(c, &s[..s.len() - rest.len()], &rest[c.len_utf8()..]) {
            out.push('\\');
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Whether `c`, between `before` and `after`, could start Markdown that
/// acts: anything at the start of a block (a heading, a list, a quote),
/// the list number's `.` or `)`, emphasis, links and images, HTML and
/// entities, table cells, math, the `:` of `http://` and the `.` of
/// `www.` (GitHub's autolinks) and the `@` of an address.
fn acts_in_markdown(c: char, before: &str, after: &str) -> bool {
    if !c.is_ascii_punctuation() {
        return false;
    }
    if before.is_empty() || (before.bytes().all(|b| b.is_ascii_digit()) && (c == '.' || c == ')')) {
        return true;
    }
    match c {
        '\\' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' | '$' | '@' => true,
        ':' => after.starts_with("//"),
        '.' => before
            .get(before.len().saturating_sub(3)..)
            .is_some_and(|w| w.eq_ignore_ascii_case("www")),
        _ => false,
    }
}

/// The number of backticks `s` starts with.
fn tick_run(s: &str) -> usize {
    s.bytes().take_while(|&b| b == b'`').count()
}

/// Where in `s` a run of exactly `n` backticks starts, as CommonMark
/// closes a code span opened by `n` backticks.
fn closing_run(s: &str, n: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(found) = s[at..].find('`') {
        let start = at + found;
        let run = tick_run(&s[start..]);
        if run == n {
            return Some(start);
        }
        at = start + run;
    }
    None
}

/// Writes `code` as a code span: a fence longer than its longest backtick
/// run, padded with spaces (CommonMark strips one on each side), `|`
/// escaped inside a table.
fn push_code(out: &mut String, code: &str, in_table: bool) {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let code = if in_table {
        code.replace('|', "\\|")
    } else {
        code.to_owned()
    };
    let pad = code.starts_with('`')
        || code.ends_with('`')
        || (code.starts_with(' ') && code.ends_with(' '));
    let pad = if pad { " " } else { "" };
    let _ = write!(out, "{fence}{pad}{code}{pad}{fence}");
}

/// A backtick fence longer than any run of backticks in `lines`.
fn fence_for(lines: &[String]) -> String {
    let longest = lines
        .iter()
        .map(|l| l.split(|c| c != '`').map(str::len).max().unwrap_or(0))
        .max()
        .unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_pipes() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        assert_eq!(cell("`a|b`"), "`a\\|b`");
        assert_eq!(inline("<pid> `<pid>`"), "\\<pid\\> `<pid>`");
    }

    #[test]
    fn backticks_without_a_partner_are_text() {
        assert_eq!(inline("a `b"), "a \\`b");
        assert_eq!(inline("``a` <img>"), "\\`\\`a\\` \\<img\\>");
        assert_eq!(inline("``a`b``"), "``a`b``");
        assert_eq!(inline("```a``"), "\\`\\`\\`a\\`\\`");
        assert_eq!(code_span("`x``y"), "``` `x``y ```");
        assert_eq!(
            inline("[l](http://e) WWW.e a@b"),
            "\\[l\\](http\\://e) WWW\\.e a\\@b"
        );
    }

    #[test]
    fn block_starts_are_escaped() {
        assert_eq!(inline("# h"), "\\# h");
        assert_eq!(inline("- x"), "\\- x");
        assert_eq!(inline("12. x"), "12\\. x");
        assert_eq!(inline("a - b. c"), "a - b. c");
    }

    #[test]
    fn fences_outgrow_backticks() {
        assert_eq!(fence_for(&["no ticks".into()]), "```");
        assert_eq!(fence_for(&["a ```` b".into()]), "`````");
    }
}

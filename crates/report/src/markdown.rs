//! A Markdown summary for `$GITHUB_STEP_SUMMARY` and merge-request
//! comments: the root cause as the heading, its summary, the evidence in a
//! fenced block (`file:line: text`), the Python traceback it ends (folded),
//! what to do as a numbered list, then a table of the other findings.

use crate::{one_line, root_finding};
use coroner_model::{Category, Report};
use std::fmt::Write as _;

/// Renders `report` as GitHub-flavoured Markdown.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let root = &report.root_cause;
    let primary = root_finding(report);
    if root.category == Category::Unknown {
        out.push_str("## coroner: no root cause found (`unknown`)\n\n");
    } else {
        let rank = root
            .rank
            .map(|r| format!(" on rank {r}"))
            .unwrap_or_default();
        let rule = root
            .rule
            .as_deref()
            .map(|r| format!(" \u{b7} `{r}`"))
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
                .map(move |e| format!("- `{}`: {}", i.path, inline(&e.message)))
        })
        .collect();
    if !errors.is_empty() {
        out.push_str("**Inputs not read in full**\n\n");
        for e in errors {
            let _ = writeln!(out, "{e}");
        }
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

/// A table cell: one line, `|` escaped, angle brackets as entities.
pub fn cell(s: &str) -> String {
    inline(s).replace('|', "\\|")
}

/// Text for a paragraph or list item: one line, `<` and `>` outside code
/// spans as entities so that log text is never read as HTML.
fn inline(s: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    let mut prev_tick = false;
    for c in one_line(s).chars() {
        match c {
            '`' => {
                if !prev_tick {
                    in_code = !in_code;
                }
                out.push(c);
            }
            '<' if !in_code => out.push_str("&lt;"),
            '>' if !in_code => out.push_str("&gt;"),
            c => out.push(c),
        }
        prev_tick = c == '`';
    }
    out
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
        assert_eq!(inline("<pid> `<pid>`"), "&lt;pid&gt; `<pid>`");
    }

    #[test]
    fn fences_outgrow_backticks() {
        assert_eq!(fence_for(&["no ticks".into()]), "```");
        assert_eq!(fence_for(&["a ```` b".into()]), "`````");
    }
}

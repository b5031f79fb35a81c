//! JUnit XML, for test-report widgets (GitLab's `artifacts:reports:junit`,
//! Jenkins, Buildkite, GitHub test-report actions).
//!
//! `<testsuites>` holds one `<testsuite name="coroner">` with one
//! `<testcase>` per rule that fired (`classname` is its category, `name`
//! its id), the root cause's first. A rule whose most severe finding is at
//! or above the `--fail-on` threshold gets a `<failure>` (message: the
//! finding's message; body: its evidence); the others pass, with their
//! message and evidence in `<system-out>`. An input that could not be read
//! in full is a test case with an `<error>`. A run with neither is one
//! passing test case, `root-cause`, holding the verdict.

use crate::root_finding;
use coroner_model::{Finding, Report, Severity};
use std::fmt::Write as _;

/// Renders `report` as JUnit XML; findings at or above `fail_on` fail.
pub fn render(report: &Report, fail_on: Severity) -> String {
    let root_rule = root_finding(report).map(|f| f.rule.as_str());
    let mut groups: Vec<(&str, Vec<&Finding>)> = Vec::new();
    for f in &report.findings {
        match groups.iter_mut().find(|(rule, _)| *rule == f.rule) {
            Some((_, list)) => list.push(f),
            None => groups.push((&f.rule, vec![f])),
        }
    }
    let mut cases = String::new();
    let mut failures = 0usize;
    for (rule, findings) in &groups {
        let Some(first) = findings.first() else {
            continue;
        };
        let worst = findings
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(first.severity);
        let mut body = String::new();
        for f in findings {
            let rank = f.rank.map(|r| format!(" rank {r}")).unwrap_or_default();
            let _ = writeln!(
                body,
                "{} {} [{}, {}]{rank} \u{d7}{}: {}",
                f.severity,
                f.rule,
                f.category,
                f.role.as_str(),
                f.count,
                f.message
            );
            for e in &f.evidence {
                let _ = writeln!(body, "  {}:{}: {}", e.input, e.line, e.text);
            }
        }
        if Some(*rule) == root_rule {
            let _ = writeln!(body, "root cause: {}", report.root_cause.summary);
            for (i, step) in report.root_cause.remediation.iter().enumerate() {
                let _ = writeln!(body, "  {}. {step}", i + 1);
            }
        }
        let _ = writeln!(
            cases,
            "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\" line=\"{}\">",
            escape(first.category.as_str()),
            escape(rule),
            escape(&first.first_seen.input),
            first.first_seen.line
        );
        if worst >= fail_on {
            failures += 1;
            let _ = writeln!(
                cases,
                "      <failure message=\"{}\" type=\"{}\">{}</failure>",
                escape(&first.message),
                worst,
                escape_text(&body)
            );
        } else {
            let _ = writeln!(
                cases,
                "      <system-out>{}</system-out>",
                escape_text(&body)
            );
        }
        cases.push_str("    </testcase>\n");
    }
    let mut errors = 0usize;
    for input in &report.inputs {
        if input.errors.is_empty() {
            continue;
        }
        errors += 1;
        let text: Vec<String> = input.errors.iter().map(|e| e.message.clone()).collect();
        let _ = write!(
            cases,
            "    <testcase classname=\"input\" name=\"{}\">\n      <error message=\"{}\" type=\"unreadable\">{}</error>\n    </testcase>\n",
            escape(&input.path),
            escape(text.first().map_or("", String::as_str)),
            escape_text(&text.join("\n"))
        );
    }
    // A report with no test case fails Jenkins' `junit` step: a run with
    // nothing to report is one passing case, the verdict.
    let mut verdict_case = 0usize;
    if groups.is_empty() && errors == 0 {
        verdict_case = 1;
        let _ = writeln!(
            cases,
            "    <testcase classname=\"coroner\" name=\"root-cause\">\n      <system-out>{}</system-out>\n    </testcase>",
            escape_text(&crate::verdict(report))
        );
    }
    let tests = groups.len() + errors + verdict_case;
    let seconds = report.stats.elapsed_ms as f64 / 1000.0;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"coroner\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{seconds:.3}\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"coroner\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{seconds:.3}\">"
    );
    let _ = writeln!(
        out,
        "    <properties>\n      <property name=\"root_cause\" value=\"{}\"/>\n      <property name=\"verdict\" value=\"{}\"/>\n    </properties>",
        escape(report.root_cause.category.as_str()),
        escape(&crate::verdict(report))
    );
    out.push_str(&cases);
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Escapes text for XML attribute values (line breaks as character
/// references, so that parsers keep them); characters XML 1.0 does not
/// allow (most C0 controls) become U+FFFD.
pub fn escape(s: &str) -> String {
    escape_xml(s, true)
}

/// Escapes text for XML element content: as [`escape`], but line breaks
/// stay as they are.
pub fn escape_text(s: &str) -> String {
    escape_xml(s, false)
}

fn escape_xml(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' if !attribute => out.push(c),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push('\u{fffd}');
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_special_characters_are_escaped() {
        assert_eq!(
            escape("a<b>&\"c\"'d'\u{7}"),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;\u{fffd}"
        );
        assert_eq!(escape("a\nb"), "a&#10;b");
        assert_eq!(escape_text("a\nb<"), "a\nb&lt;");
    }
}

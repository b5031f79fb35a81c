//! GitHub Actions workflow commands: one annotation per finding
//! (`::error file=…,line=…,title=…::message`), then a plain verdict line.
//!
//! The root cause comes first, then the other findings by severity.
//! GitHub shows at most 10 error and 10 warning annotations per step and
//! 50 per job, so at most [`MAX_PER_LEVEL`] are written per level and
//! [`MAX_TOTAL`] in all; a plain line says how many were left out.

use crate::{root_finding, verdict, PathBase};
use coroner_model::{Finding, Report, Severity};
use std::fmt::Write as _;

/// Annotations written per level (`error`, `warning`, `notice`).
pub const MAX_PER_LEVEL: usize = 10;
/// Annotations written in all.
pub const MAX_TOTAL: usize = 50;

/// The workflow command for a severity.
pub fn command(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical | Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    }
}

/// Renders `report` as workflow commands followed by the verdict.
pub fn render(report: &Report, base: &PathBase) -> String {
    let mut out = String::new();
    let root = root_finding(report);
    let mut per_level = [0usize; 3];
    let mut written = 0usize;
    let mut left_out = 0usize;
    for (i, f) in report.findings.iter().enumerate() {
        let is_root = i == 0 && root.is_some();
        let slot = match command(f.severity) {
            "error" => 0,
            "warning" => 1,
            _ => 2,
        };
        if written >= MAX_TOTAL || per_level[slot] >= MAX_PER_LEVEL {
            left_out += 1;
            continue;
        }
        per_level[slot] += 1;
        written += 1;
        out.push_str(&annotation(report, f, is_root, base));
        out.push('\n');
    }
    for input in &report.inputs {
        for e in &input.errors {
            let _ = writeln!(
                out,
                "::error title={}::{}",
                escape_property("coroner: input not read in full"),
                escape_data(&format!("{}: {}", input.path, e.message))
            );
        }
    }
    if left_out > 0 {
        let _ = writeln!(
            out,
            "coroner: {left_out} more finding(s) not annotated (GitHub shows at most {MAX_PER_LEVEL} per level)"
        );
    }
    out.push_str(&verdict(report));
    out.push('\n');
    out
}

fn annotation(report: &Report, f: &Finding, is_root: bool, base: &PathBase) -> String {
    let mut props = Vec::new();
    let evidence = f.evidence.first();
    if let Some(path) = evidence.and_then(|e| base.display(&e.input)) {
        props.push(format!("file={}", escape_property(&path)));
        if let Some(e) = evidence {
            props.push(format!("line={}", e.line.max(1)));
        }
    }
    let rank = if is_root {
        crate::root_rank(&report.root_cause)
    } else {
        f.rank.map(|r| format!("rank {r}"))
    };
    let rank = rank.map(|r| format!(" on {r}")).unwrap_or_default();
    let title = if is_root {
        format!("Root cause: {}{rank} ({})", f.category, f.rule)
    } else {
        format!("{} [{}]{rank}", f.rule, f.category)
    };
    props.push(format!("title={}", escape_property(&title)));
    let mut message = if is_root {
        report.root_cause.summary.clone()
    } else {
        f.message.clone()
    };
    if f.count > 1 {
        let _ = write!(message, " (\u{d7}{})", f.count);
    }
    if let Some(e) = evidence {
        let _ = write!(message, "\n\n{}", e.text);
    }
    if is_root && !f.remediation.is_empty() {
        message.push_str("\n\nWhat to do:");
        for (i, step) in f.remediation.iter().enumerate() {
            let _ = write!(message, "\n{}. {step}", i + 1);
        }
    }
    format!(
        "::{} {}::{}",
        command(f.severity),
        props.join(","),
        escape_data(&message)
    )
}

/// Escapes a command's message: `%`, CR and LF.
pub fn escape_data(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes a command's property value: as [`escape_data`], plus `:` and `,`.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_follows_the_runner() {
        assert_eq!(
            escape_data("100% done\r\nnext: a,b"),
            "100%25 done%0D%0Anext: a,b"
        );
        assert_eq!(
            escape_property("100% done\nnext: a,b"),
            "100%25 done%0Anext%3A a%2Cb"
        );
    }
}

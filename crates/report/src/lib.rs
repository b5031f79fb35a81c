//! The one place where coroner's data becomes text.
//!
//! - [`json`] writes the versioned JSON report (the stable contract).
//! - [`human`] writes the terminal report: the root cause first as a miette
//!   diagnostic with its evidence line in context, then the other findings
//!   collapsed with counts, then what to do.
//! - [`diagnostic`] renders any miette diagnostic (rule-file errors) with
//!   the same theme.
//! - [`explain`] renders the answers of `coroner explain`.
//! - [`jsonl`] writes each finding as soon as it is seen, then a verdict.
//! - [`sarif`], [`github`], [`markdown`] and [`junit`] write the formats
//!   that CI systems read: SARIF 2.1.0 for code scanning, GitHub Actions
//!   workflow commands (annotations), a Markdown summary for job summaries
//!   and merge-request comments, and JUnit XML for test-report widgets.
//! - [`verdict`] is the one-line answer that `--quiet` prints and the CI
//!   formats end with.
#![forbid(unsafe_code)]

mod core_section;
pub mod diagnostic;
pub mod explain;
pub mod github;
pub mod html;
pub mod human;
pub mod json;
pub mod jsonl;
pub mod junit;
pub mod markdown;
pub mod sarif;
mod snippet;
mod sparkline;
mod traceback_section;

use coroner_model::{ActionKind, Category, Finding, Report, RootCause};
use std::path::{Component, Path, PathBuf};

/// How to style terminal output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Use ANSI colours.
    pub color: bool,
    /// Wrap at this many columns.
    pub width: usize,
    /// Show everything: every finding in full, every step, however long
    /// the report gets.
    pub verbose: bool,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            color: false,
            width: 80,
            verbose: false,
        }
    }
}

/// The one-line verdict: `coroner: root cause gpu-oom (rank 1) — <summary>`
/// or `coroner: no root cause found (unknown)`. Never contains a newline.
pub fn verdict(report: &Report) -> String {
    let root = &report.root_cause;
    if root.category == Category::Unknown {
        return "coroner: no root cause found (unknown)".to_owned();
    }
    let rank = root_rank(root)
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    format!(
        "coroner: root cause {}{rank} \u{2014} {}",
        root.category,
        one_line(&root.summary)
    )
}

/// The root cause's rank as a headline names it: `rank 3`, or `presumed
/// rank 0` when no line named it and it was inferred.
pub fn root_rank(root: &RootCause) -> Option<String> {
    let rank = root.rank?;
    Some(if root.rank_presumed {
        format!("presumed rank {rank}")
    } else {
        format!("rank {rank}")
    })
}

/// The finding behind the root cause: the report's first finding when its
/// rule is the root cause's.
pub fn root_finding(report: &Report) -> Option<&Finding> {
    report.findings.first().filter(|f| {
        report.root_cause.category != Category::Unknown
            && report.root_cause.rule.as_deref() == Some(f.rule.as_str())
    })
}

/// The one line saying what to do next with the job and the nodes:
/// `drain gpu-node-17 and resubmit; the code is not at fault`.
pub fn next_step(root: &RootCause) -> Option<String> {
    let action = root.action.as_ref()?;
    let nodes = match action.hosts.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        [first, rest @ ..] if rest.len() < 4 => Some(format!("{first}, {}", rest.join(", "))),
        many => Some(format!(
            "{} nodes ({}, ...)",
            many.len(),
            many[..3].join(", ")
        )),
    };
    let the_gpu = match (&root.gpu, &nodes) {
        (Some(gpu), Some(n)) => format!("GPU {gpu} on {n}"),
        (Some(gpu), None) => format!("GPU {gpu}"),
        (None, Some(n)) => format!("the GPU on {n}"),
        (None, None) => "the GPU".to_owned(),
    };
    let the_node = nodes.unwrap_or_else(|| "the node".to_owned());
    let first_step = || {
        root.remediation
            .first()
            .map(|s| first_sentence(s))
            .filter(|s| s.chars().count() <= 160)
    };
    let unchanged = "resubmitting it unchanged will fail the same way";
    let text = match action.kind {
        ActionKind::RestartJob => match root.category {
            // A stalled collective or a hung job passes on a resubmit only when
            // its cause did: a rank that is slow every time stalls again.
            Category::CollectiveTimeout => {
                "find the rank that fell behind (see What to do) before \
                resubmitting; a rank slow every time (data preparation, evaluation or a save \
                on one rank) stalls the job again"
                    .to_owned()
            }
            Category::Hang => {
                "find what the job waits for (see What to do) before resubmitting; a \
                deadlock or a stale lock hangs it again"
                    .to_owned()
            }
            _ => "resubmit the job; the failure can pass, the code need not change".to_owned(),
        },
        ActionKind::ResetGpu => {
            format!("reset {the_gpu} and resubmit; the code is not at fault")
        }
        ActionKind::RebootNode => {
            format!(
                "reboot {the_node} and resubmit without it until then; the code is not at fault"
            )
        }
        ActionKind::DrainNode => {
            format!("drain {the_node} and resubmit; the code is not at fault")
        }
        ActionKind::FixCode => match first_step() {
            Some(step) => format!("fix the code: {step} ({unchanged})"),
            None => format!("fix the code; {unchanged}"),
        },
        ActionKind::FixConfig => match first_step() {
            Some(step) => format!("change the job's settings: {step} ({unchanged})"),
            None => format!("change the job's settings; {unchanged}"),
        },
        ActionKind::FixEnvironment => {
            let where_ = if action.hosts.is_empty() {
                String::new()
            } else {
                format!(" on {the_node}")
            };
            match first_step() {
                Some(step) => format!("fix the environment{where_}: {step} ({unchanged})"),
                None => format!("fix the environment{where_}; {unchanged}"),
            }
        }
        ActionKind::None => "nothing needs doing about it by itself".to_owned(),
    };
    Some(text)
}

/// The first sentence of `text`, without its full stop.
fn first_sentence(text: &str) -> String {
    let end = sentence_end(text).unwrap_or(text.len());
    let sentence = text[..end].trim();
    // `Reduce the batch size` reads on after a colon as `reduce ...`;
    // `NCCL_DEBUG=INFO ...` or `PyTorch ...` keep their capitals.
    let mut chars = sentence.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if first.is_uppercase() && second.is_lowercase() => first
            .to_lowercase()
            .chain(sentence.chars().skip(1))
            .collect(),
        _ => sentence.to_owned(),
    }
}

/// Where the first sentence of `text` ends: a full stop before a space or
/// the end, outside inline code (`` `...` ``, unless a backtick is left
/// open), that is not part of an ellipsis (`instance of ... what()`) or an
/// abbreviation (`e.g.`, `i.e.`, `vs.`, `cf.`).
fn sentence_end(text: &str) -> Option<usize> {
    let balanced = text.matches('`').count().is_multiple_of(2);
    let mut in_code = false;
    let mut previous = None;
    for (i, c) in text.char_indices() {
        match c {
            '`' if balanced => in_code = !in_code,
            '.' if !in_code => {
                let ends = text[i + 1..].chars().next().is_none_or(char::is_whitespace)
                    && previous != Some('.')
                    && !ends_with_abbreviation(&text[..i]);
                if ends {
                    return Some(i);
                }
            }
            _ => {}
        }
        previous = Some(c);
    }
    None
}

/// Whether `before` (the text before a full stop) ends with an
/// abbreviation whose full stop does not end the sentence.
fn ends_with_abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or_default();
    ["e.g", "i.e", "vs", "cf"]
        .iter()
        .any(|a| word.eq_ignore_ascii_case(a))
}

/// The findings other than the root cause's, most severe first.
/// Ranges of the ascending `ranks`: `0-3, 5, 7-9`; past the first few,
/// `…` and how many ranks are not shown.
pub fn rank_ranges(ranks: &[u32]) -> String {
    const SHOWN: usize = 8;
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    let mut shown = 0usize;
    for &r in ranks {
        let full = ranges.len() == SHOWN;
        match ranges.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(r) => *end = r,
            Some((_, end)) if *end == r => {}
            _ if full => break,
            _ => ranges.push((r, r)),
        }
        shown += 1;
    }
    let mut text: Vec<String> = ranges
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    if shown < ranks.len() {
        text.push(format!("… ({} more)", ranks.len() - shown));
    }
    text.join(", ")
}

/// ` on 4 ranks: 0-3` for a finding seen on several ranks, ` rank 2` for
/// one on one rank, nothing for one of no known rank.
pub fn where_seen(f: &Finding) -> String {
    if f.ranks.len() > 1 {
        format!(" on {} ranks: {}", f.ranks.len(), rank_ranges(&f.ranks))
    } else {
        f.rank.map(|r| format!(" rank {r}")).unwrap_or_default()
    }
}

pub fn other_findings(report: &Report) -> &[Finding] {
    let skip = usize::from(root_finding(report).is_some());
    report.findings.get(skip..).unwrap_or_default()
}

/// `2026-11-29T17:16:18.664318` as `2026-11-29 17:16:18.664`; a time
/// printed to the second (`.000000`) as `2026-11-29 21:00:10`.
pub(crate) fn readable_time(time: &str) -> String {
    let time = time.replacen('T', " ", 1);
    match time.rsplit_once('.') {
        Some((seconds, fraction)) if fraction.bytes().all(|b| b == b'0') => seconds.to_owned(),
        Some((seconds, fraction)) => format!("{seconds}.{}", fraction.get(..3).unwrap_or(fraction)),
        None => time,
    }
}

/// `text` with every run of whitespace (newlines included) made one space.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where the CI formats make input paths relative to: the repository or
/// workspace root that annotations and code-scanning alerts are shown
/// against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathBase {
    /// The directory relative input paths were given from (the current
    /// directory).
    pub cwd: PathBuf,
    /// The directory to make paths relative to; `cwd` when absent. A
    /// relative prefix is taken from `cwd`.
    pub prefix: Option<PathBuf>,
}

impl PathBase {
    /// Paths relative to `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        PathBase {
            cwd: cwd.into(),
            prefix: None,
        }
    }

    /// `input` (a report's display path) relative to the base, with forward
    /// slashes, when it lies under the base; `Err` with the absolute path
    /// otherwise. `None` for standard input (`-`).
    pub fn relative(&self, input: &str) -> Option<Result<String, String>> {
        if input == "-" {
            return None;
        }
        let absolute = normalize(&self.cwd.join(input));
        let base = match &self.prefix {
            Some(p) => normalize(&self.cwd.join(p)),
            None => normalize(&self.cwd),
        };
        Some(match absolute.strip_prefix(&base) {
            Ok(rel) if rel.as_os_str().is_empty() => Err(slashes(&absolute)),
            Ok(rel) => Ok(slashes(rel)),
            Err(_) => Err(slashes(&absolute)),
        })
    }

    /// A path for display in annotations: relative when possible, absolute
    /// otherwise; `None` for standard input.
    pub fn display(&self, input: &str) -> Option<String> {
        self.relative(input).map(|r| r.unwrap_or_else(|abs| abs))
    }
}

/// `path` with `.` and `..` components resolved lexically (symbolic links
/// are not followed: the path stays the one the user named).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The path's components joined with `/`.
fn slashes(path: &Path) -> String {
    let mut out = String::new();
    for c in path.components() {
        match c {
            Component::RootDir => out.push('/'),
            Component::Prefix(p) => out.push_str(&p.as_os_str().to_string_lossy()),
            other => {
                if !out.is_empty() && !out.ends_with('/') {
                    out.push('/');
                }
                out.push_str(&other.as_os_str().to_string_lossy());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_sentence_runs_past_ellipses_code_and_abbreviations() {
        assert_eq!(
            first_sentence("Read the lines above (`terminate called ... what(): ...`, an assert). Then fix it."),
            "read the lines above (`terminate called ... what(): ...`, an assert)"
        );
        assert_eq!(
            first_sentence("Use a smaller batch, e.g. 8, and retry. Or more GPUs."),
            "use a smaller batch, e.g. 8, and retry"
        );
        assert_eq!(
            first_sentence("Run `python -m torch.utils.collect_env`. It prints versions."),
            "run `python -m torch.utils.collect_env`"
        );
        assert_eq!(first_sentence("No full stop"), "no full stop");
        assert_eq!(
            first_sentence("E.g. set `FOO=1` first. Then rerun."),
            "E.g. set `FOO=1` first"
        );
        assert_eq!(
            first_sentence("Compare A vs. B first. Then pick."),
            "compare A vs. B first"
        );
        // A backtick left open does not hide every full stop after it.
        assert_eq!(first_sentence("Set `FOO. Then rerun."), "set `FOO");
    }

    #[test]
    fn paths_are_made_relative_to_the_base() {
        let base = PathBase::new("/repo");
        assert_eq!(
            base.relative("logs/a.log"),
            Some(Ok("logs/a.log".to_owned()))
        );
        assert_eq!(
            base.relative("./logs/../logs/a.log"),
            Some(Ok("logs/a.log".to_owned()))
        );
        assert_eq!(
            base.relative("/repo/x/b.log"),
            Some(Ok("x/b.log".to_owned()))
        );
        assert_eq!(
            base.relative("/elsewhere/c.log"),
            Some(Err("/elsewhere/c.log".to_owned()))
        );
        assert_eq!(base.relative("-"), None);
        let prefixed = PathBase {
            cwd: "/repo".into(),
            prefix: Some("logs".into()),
        };
        assert_eq!(
            prefixed.relative("logs/a.log"),
            Some(Ok("a.log".to_owned()))
        );
    }
}

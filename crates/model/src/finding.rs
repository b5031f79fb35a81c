use crate::{Category, Role, Severity};
use serde::{Deserialize, Serialize};

/// Where something was seen: an input, a 1-based line and a byte offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// The input's display path (`-` for standard input).
    pub input: String,
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the start of the line in the (decompressed) input.
    pub byte_offset: u64,
    /// The wall-clock time the line starts with, when it has one:
    /// `2026-11-29T17:16:18.664318`, or `11-29T17:16:18.664318` from forms
    /// that print no year (glog, syslog).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// The time the program wrote after a launcher's or a collector's
    /// prefix whose own time is `time`: it orders findings that the
    /// prefix's (often coarser) time puts at one moment. Not reported.
    #[serde(skip)]
    pub own_time: Option<String>,
}

impl Location {
    /// The time as month, day and time of day, comparable across forms
    /// with and without a year.
    pub fn time_of_year(&self) -> Option<&str> {
        of_year(self.time.as_deref()?)
    }

    /// [`Location::own_time`] as [`Location::time_of_year`] gives `time`.
    pub fn own_time_of_year(&self) -> Option<&str> {
        of_year(self.own_time.as_deref()?)
    }
}

/// `11-29T17:16:18.664318`, from a time with or without its year.
fn of_year(t: &str) -> Option<&str> {
    t.get(t.len().checked_sub(21)?..)
}

/// A line that supports a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The input's display path.
    pub input: String,
    /// 1-based line number.
    pub line: u64,
    /// The line as printed (colour codes removed, length capped).
    pub text: String,
    /// Surrounding lines, kept for the human report only.
    #[serde(skip)]
    pub context: Option<Context>,
}

/// Lines around an evidence line, for showing it in context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// Up to a few lines before, oldest first.
    pub before: Vec<String>,
    /// Up to a few lines after.
    pub after: Vec<String>,
    /// Byte range of the matched text within the evidence line.
    pub span: Option<(usize, usize)>,
}

/// One rule's matches, collapsed: the first occurrence, a count and a few
/// evidence lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Id of the rule that matched.
    pub rule: String,
    /// Taxonomy category of the rule.
    pub category: Category,
    /// Severity of the rule.
    pub severity: Severity,
    /// Whether this is a cause, a symptom or context.
    pub role: Role,
    /// The rule's title.
    pub title: String,
    /// The rule's message with placeholders filled from the first match.
    pub message: String,
    /// How many times the rule matched.
    pub count: u64,
    /// Where it matched first.
    pub first_seen: Location,
    /// The matching lines (the first few).
    pub evidence: Vec<Evidence>,
    /// Named captures of the first match.
    pub captures: crate::Captures,
    /// The rank the finding belongs to, when known; for a finding seen on
    /// several ranks (`ranks`), the first of them in the report's order
    /// (the root cause's own, for its finding).
    pub rank: Option<u32>,
    /// Every rank the same finding was seen on, ascending, when it was
    /// seen on more than one: findings of one rule with the same message,
    /// GPU and relation to the incident on different ranks are reported
    /// once. Empty for a finding of one rank or none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<u32>,
    /// The node it happened on, when known: a host name from the line
    /// (NCCL's `host:pid:tid` header, a syslog host field, a scheduler's
    /// node name) or from the rank's other lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The GPU it happened on, when known: its PCI address (`0000:1b:00`:
    /// domain, bus, device), or `GPU N` (its index) where only that is
    /// known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// What to do with the job and the node after this failure (the
    /// rule's step, else its category's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<crate::ActionKind>,
    /// Ordered remediation steps, most likely fix first.
    pub remediation: RuleText,
    /// Documentation links or names.
    pub references: RuleText,
    /// The rule of the finding this one is a consequence of, when the
    /// incident holds one whose rule `explains` this category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explained_by: Option<String>,
    /// The Python traceback whose exception line is the finding's first
    /// match, read into its exceptions and frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<crate::Traceback>,
    /// The series of a training metric behind a trend finding (growing
    /// memory, a loss turning non-finite, a collapsing loss scale or
    /// throughput, an idle GPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<crate::Curve>,
    /// The process that printed the first match, where the line's header
    /// names it (NCCL's `host:pid:tid [device]`): read to tie the finding
    /// to a rank, not reported.
    #[serde(skip)]
    pub printed_by: Option<Printer>,
}

/// A process as an NCCL line header names it: its pid and the CUDA device
/// it drove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Printer {
    pub pid: u32,
    pub device: u32,
}

/// Lines of text a rule gives every one of its findings (remediation
/// steps, references): shared by the findings, not copied into each. It
/// reads and serializes as a list of strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleText(std::sync::Arc<[String]>);

impl std::ops::Deref for RuleText {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.0
    }
}

impl From<Vec<String>> for RuleText {
    fn from(lines: Vec<String>) -> Self {
        RuleText(lines.into())
    }
}

impl Serialize for RuleText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl<'de> Deserialize<'de> for RuleText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(d).map(RuleText::from)
    }
}

impl<'a> IntoIterator for &'a RuleText {
    type Item = &'a String;
    type IntoIter = std::slice::Iter<'a, String>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

//! The on-disk form of a rule file, as serde reads it from TOML.
//!
//! Spans are kept for the values the validator may need to point at.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// One `rules/<family>/<id>.toml` file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    pub id: Spanned<String>,
    pub title: String,
    pub category: Spanned<String>,
    pub severity: Spanned<String>,
    #[serde(default)]
    pub role: Option<Spanned<String>>,
    pub message: Spanned<String>,
    #[serde(default)]
    pub remediation: Vec<String>,
    #[serde(default)]
    pub references: Vec<String>,
    /// Rules whose matches on the same line this rule replaces.
    #[serde(default)]
    pub supersedes: Vec<Spanned<String>>,
    /// When true, the rule's match on a line is dropped if any other rule
    /// matched that line.
    #[serde(default)]
    pub fallback: bool,
    /// Categories of findings anywhere in the incident that this rule's
    /// finding explains: they are its consequences, listed as symptoms.
    #[serde(default)]
    pub explains: Vec<Spanned<String>>,
    /// A fact kept for correlating other findings (which GPU a rank uses),
    /// not reported itself.
    #[serde(default)]
    pub internal: bool,
    /// A warning that, when nothing of error severity is found, names the
    /// root cause with low confidence: the only sign of a known failure.
    #[serde(default)]
    pub sole_sign: bool,
    /// A failure named only in general terms (NCCL's `unhandled system
    /// error`, whose `Last error:` line says more): any specific cause
    /// found in the incident is named root cause before it.
    #[serde(default)]
    pub generic: bool,
    /// The line says only that the process stopped itself (an abort): a
    /// cause found before it in the same input, however general, says why
    /// and is named root cause before it.
    #[serde(default)]
    pub yields_to_earlier: bool,
    /// The rule reads a launcher's own account of which rank failed first
    /// (torchrun's `Root Cause (first observed failure)` block): when the
    /// root cause is of its category, its rank is the root cause's.
    #[serde(default)]
    pub first_failure: bool,
    /// The category is the usual reading of what the line shows, not a
    /// record of it (a SIGKILL read as the OOM killer's): as root cause it
    /// has medium confidence at most unless another finding of the same
    /// category confirms it.
    #[serde(default)]
    pub presumed: bool,
    /// The match counts only when its last line is among the last this
    /// many lines of its input: a log that stops at this step (a job that
    /// hung there).
    #[serde(default)]
    pub tail_lines: Option<u64>,
    /// What to do with the job and the node after this failure (an
    /// `ActionKind` id); the category's step when absent.
    #[serde(default)]
    pub action: Option<Spanned<String>>,
    #[serde(rename = "match")]
    pub matching: Spanned<MatchSpec>,
    #[serde(default)]
    pub examples: Vec<ExampleSpec>,
}

/// The `[match]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchSpec {
    /// Literals; a line is tried only if it holds one.
    pub literals: Spanned<Vec<String>>,
    /// Match the literals exactly rather than ignoring ASCII case.
    #[serde(default)]
    pub literals_match_case: bool,
    /// At least one of these must match the anchor line.
    #[serde(default)]
    pub any: Vec<Spanned<String>>,
    /// Every one of these must match: on the anchor line, or within
    /// `window` lines after it.
    #[serde(default)]
    pub all: Vec<Spanned<String>>,
    /// None of these may match the anchor line.
    #[serde(default)]
    pub not: Vec<Spanned<String>>,
    /// How many lines after the anchor `all` may look at.
    #[serde(default)]
    pub window: u32,
    /// Kinds of input the rule applies to (all text kinds when empty).
    #[serde(default)]
    pub kinds: Vec<Spanned<String>>,
    /// Comparisons between captures that must hold for a match.
    #[serde(default)]
    pub when: Vec<Spanned<String>>,
    /// Patterns tried on the two lines just before the anchor, nearest
    /// first; their captures are added to the match (the frame a Python
    /// exception was raised in precedes the exception line).
    #[serde(default)]
    pub before: Vec<Spanned<String>>,
    /// The match counts only when one of `before` matched: the line means
    /// the rule's failure only after such a line.
    #[serde(default)]
    pub before_required: bool,
}

/// One `[[examples]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleSpec {
    pub fires: bool,
    pub input: String,
    #[serde(default)]
    pub captures: BTreeMap<String, String>,
    /// Expected rank of the finding, when the example shows one.
    #[serde(default)]
    pub rank: Option<u32>,
    /// Expected number of matches.
    #[serde(default)]
    pub count: Option<u64>,
}

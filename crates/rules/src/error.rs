//! Why a rule file was rejected, as a miette diagnostic that points at the
//! offending key.

use miette::{Diagnostic, NamedSource, SourceSpan};
use std::ops::Range;

/// What kind of mistake a rule file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleErrorKind {
    /// The file could not be read.
    Io,
    /// Not TOML, or not the rule schema.
    Syntax,
    /// The `id` is not kebab-case or differs from the file stem.
    BadId,
    /// Two rules share an id.
    DuplicateId,
    /// `category` is not in the taxonomy.
    UnknownCategory,
    /// `severity` or `role` has an unknown value.
    UnknownValue,
    /// A regex does not compile.
    BadRegex,
    /// A pattern uses `(?&name)` with a name no pattern table defines.
    UnknownPattern,
    /// The message names a capture no pattern defines.
    UndefinedPlaceholder,
    /// `[match]` lacks literals or patterns.
    EmptyMatch,
    /// The rule lacks a firing or a quiet example.
    MissingExample,
    /// `supersedes` names a rule that does not exist.
    UnknownRule,
    /// A `when` condition cannot be read or names no capture group.
    BadCondition,
    /// Two settings that cannot go together (`before_required` with
    /// `supersedes`).
    Conflict,
}

/// A rejected rule file.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{path}: {message}")]
#[diagnostic(code(coroner::rules::invalid))]
pub struct RuleError {
    /// What kind of mistake.
    pub kind: RuleErrorKind,
    /// The rule file's path.
    pub path: String,
    /// What is wrong, in one sentence.
    pub message: String,
    #[source_code]
    src: NamedSource<String>,
    #[label("{label}")]
    span: Option<SourceSpan>,
    label: String,
    #[help]
    help: Option<String>,
}

impl RuleError {
    pub(crate) fn new(
        kind: RuleErrorKind,
        path: &str,
        text: &str,
        span: Option<Range<usize>>,
        message: impl Into<String>,
    ) -> Self {
        let message = message.into();
        RuleError {
            kind,
            path: path.to_owned(),
            label: short_label(kind).to_owned(),
            src: NamedSource::new(path, text.to_owned()),
            span: span.map(|r| SourceSpan::from(r.start..r.end.max(r.start))),
            help: None,
            message,
        }
    }

    /// A file that is not TOML, or not of the expected shape.
    pub(crate) fn syntax(path: &str, text: &str, e: &toml::de::Error) -> Self {
        RuleError::new(
            RuleErrorKind::Syntax,
            path,
            text,
            e.span(),
            e.message().trim().to_owned(),
        )
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Byte range in the rule file the error points at, if any.
    pub fn span(&self) -> Option<Range<usize>> {
        self.span.map(|s| s.offset()..s.offset() + s.len())
    }
}

fn short_label(kind: RuleErrorKind) -> &'static str {
    match kind {
        RuleErrorKind::Io => "cannot read",
        RuleErrorKind::Syntax => "here",
        RuleErrorKind::BadId => "this id",
        RuleErrorKind::DuplicateId => "defined again here",
        RuleErrorKind::UnknownCategory => "not a taxonomy category",
        RuleErrorKind::UnknownValue => "unknown value",
        RuleErrorKind::BadRegex => "this pattern",
        RuleErrorKind::UnknownPattern => "no such named pattern",
        RuleErrorKind::UndefinedPlaceholder => "in this message",
        RuleErrorKind::EmptyMatch => "this table",
        RuleErrorKind::MissingExample => "this rule",
        RuleErrorKind::UnknownRule => "no such rule",
        RuleErrorKind::BadCondition => "this condition",
        RuleErrorKind::Conflict => "this table",
    }
}

//! coroner's rule engine.
//!
//! A rule is a TOML file (`rules/<family>/<id>.toml`) that names a failure:
//! its taxonomy category, severity and role, how to recognise it in a line
//! of log text, a message with `{capture}` placeholders, ordered
//! remediation steps, references, and firing and quiet examples.
//!
//! - [`RuleSet::load`] reads the built-in rules (embedded at build time)
//!   and user directories, and validates them; every mistake comes back as
//!   a [`RuleError`], a miette diagnostic pointing at the offending key.
//! - [`Scanner`] feeds lines through a set and yields [`Match`]es.
//!
//! This crate knows nothing of log formats: callers hand it [`Line`]s.
#![forbid(unsafe_code)]
// Inputs are untrusted: no panicking shortcuts on the bytes they hold.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod always_set;
mod block_search;
mod buckets;
mod condition;
mod error;
mod hashed;
mod matcher;
mod patterns;
mod prefilter;
mod rule;
mod schema;
mod set;

pub use error::{RuleError, RuleErrorKind};
pub use matcher::{is_hard_wrapped, Line, Match, MatchedLine, Scanner, WRAP_WIDTH};
pub use patterns::{Patterns, PATTERNS_FILE};
pub use rule::{parse_rule, parse_rule_with, Compile, Rule};
pub use schema::ExampleSpec;
pub use set::{RuleSet, RuleSources, BUILTIN_DIGEST, BUILTIN_RULES};

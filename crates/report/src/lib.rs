//! The one place where coroner's data becomes text.
//!
//! - [`json`] writes the versioned JSON report (the stable contract).
//! - [`human`] writes the terminal report: the root cause first as a miette
//!   diagnostic with its evidence line in context, then the other findings
//!   collapsed with counts, then what to do.
//! - [`diagnostic`] renders any miette diagnostic (rule-file errors) with
//!   the same theme.
//! - [`explain`] renders the answers of `coroner explain`.

pub mod diagnostic;
pub mod explain;
pub mod human;
pub mod json;
mod snippet;

/// How to style terminal output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Use ANSI colours.
    pub color: bool,
    /// Wrap at this many columns.
    pub width: usize,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            color: false,
            width: 80,
        }
    }
}

//! The data model shared by every coroner crate.
//!
//! Everything here is plain data with serde derives and no I/O: a
//! [`Category`] from the taxonomy, a [`Severity`], the [`Role`] a finding
//! plays in an incident, the [`Finding`]s the rule engine produces and the
//! [`Report`] that the renderers print. Parsers, rules, analysis and
//! rendering all depend on this crate and on nothing of each other's that
//! they do not need.
#![forbid(unsafe_code)]

mod action;
mod captures;
mod category;
mod curve;
mod dump;
mod finding;
mod report;
mod severity;
mod text;
mod traceback;

pub use action::{Action, ActionKind, UnknownAction};
pub use captures::Captures;
pub use category::{Category, UnknownCategory};
pub use curve::{Curve, CurveFit, CurveMark, CurvePoint};
pub use dump::{
    Frame, GpuCore, GpuDevice, GpuException, GpuKernel, HostCore, HostThread, MappedModule,
    MemoryMap, MemoryRun, MemorySegment, Process, Signal, SourceLine,
};
pub use finding::{Context, Evidence, Finding, Location, Printer, RuleText};
pub use report::{
    Confidence, InputError, InputKind, InputSummary, Report, RootCause, Stats, Tool, UnreadLines,
};
pub use severity::{Role, Severity, UnknownSeverity};
pub use text::{
    cap_chars, inert, inert_capped, inert_commands_output, inert_output, shown_bytes, shown_path,
};
pub use traceback::{ChainLink, PyException, PyFrame, Traceback};

/// Version of the JSON report layout; bumped only for incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

//! Tests of the `coroner` binary: real fixtures in, reports out.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ci;
mod cli;
mod copies;
mod cores;
mod dumps;
mod fixtures;
mod hostile;
mod html;
mod inert;
mod knowledge;
mod nodes;
mod prefixes;
mod processes;
mod rules;
mod run_dirs;
mod source_messages;
mod timeline;
mod tracebacks;
mod util;
mod ux;
mod versions;
mod wild;

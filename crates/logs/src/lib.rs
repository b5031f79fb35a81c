//! Parsers for the shapes log lines take.
//!
//! [`strip_rank_prefix`] removes the prefixes launchers put in front of
//! every line of a rank's output (`[rank3]:` from PyTorch,
//! `[default3]:` from `torchrun --tee`) and reports the rank they name.
//! [`TracebackReader`] reads Python tracebacks, chained ones included, into
//! their exceptions and frames. [`line_time`] reads the wall-clock time a
//! line starts with. [`continues_message`] tells whether a line is the rest
//! of the message on the line before it, and [`embedded_message`] finds
//! an exception's line inside a flattened traceback or a JSON field.
//! [`spawned_process`] reads the header `mp.spawn` prints before a child's
//! traceback, which says whose the lines after it are.
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

mod desync;
mod embedded;
mod horovod_stall;
mod host;
mod prefix;
mod record;
mod spawned;
mod stack_dump;
mod template;
mod timestamp;
mod traceback;

pub use desync::{DesyncGroup, DesyncReader, DesyncSnapshot};
pub use embedded::embedded_message;
pub use horovod_stall::{StallEntry, StallFact, StallReader, StallReport, StallSide};
pub use host::{is_host_name, line_host, nccl_process, NcclProcess};
pub use prefix::{strip_rank_prefix, Prefixed};
pub use record::{
    both_prefixed, continues_message, continues_wrapped_message, launcher_prefixed,
    rest_of_cut_line,
};
pub use spawned::spawned_process;
pub use stack_dump::{DumpTool, StackDump, StackDumpReader, StackThread, Trigger};
pub use template::suspicious_template;
pub use timestamp::{line_time, LineTime};
pub use traceback::{
    RankedTraceback, TracebackReader, IGNORED as IGNORED_EXCEPTION, MAX_OPEN as MAX_OPEN_TRACEBACKS,
};

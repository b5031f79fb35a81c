//! The header `torch.multiprocessing.spawn` prints before a child's
//! traceback when it re-raises the child's exception in the parent:
//!
//! ```text
//! torch.multiprocessing.spawn.ProcessRaisedException:
//!
//! -- Process 1 terminated with the following error:
//! Traceback (most recent call last):
//!   ...
//! RuntimeError: CUDA error: invalid device ordinal
//! ```
//!
//! The lines after it are the child's, printed by the parent without any
//! rank prefix: the header is what says whose they are. The process index
//! is the one `mp.spawn` passed to the child, its local rank (detectron2,
//! Lightning's `ddp_spawn` and most `mp.spawn` scripts use it as such).

use nom::bytes::complete::tag;
use nom::character::complete::{digit1, space0};
use nom::combinator::{eof, map_res};
use nom::sequence::{delimited, preceded, terminated};
use nom::{IResult, Parser};

/// The process index of a `-- Process N terminated with the following
/// error:` line (its launcher prefix removed), or `None` for any other line.
pub fn spawned_process(text: &str) -> Option<u32> {
    header(text.trim()).ok().map(|(_, index)| index)
}

fn header(input: &str) -> IResult<&str, u32> {
    terminated(
        delimited(
            (tag("--"), space0, tag("Process ")),
            map_res(digit1, str::parse::<u32>),
            tag(" terminated with the following error:"),
        ),
        preceded(space0, eof),
    )
    .parse(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_process_index() {
        assert_eq!(
            spawned_process("-- Process 1 terminated with the following error:"),
            Some(1)
        );
        assert_eq!(
            spawned_process("  -- Process 12 terminated with the following error:  "),
            Some(12)
        );
    }

    #[test]
    fn other_lines_are_not_headers() {
        for line in [
            "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL",
            "-- Process terminated with the following error:",
            "-- Process 1 terminated with the following error: and more",
            "Process 1 terminated with the following error:",
            "-- Process 99999999999 terminated with the following error:",
        ] {
            assert_eq!(spawned_process(line), None, "{line}");
        }
    }
}

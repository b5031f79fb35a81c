//! Whether a line starts a record of its own or continues the one before.
//!
//! A log line usually starts with something that marks a new record: a
//! time, a level, an NCCL `host:pid:tid [dev]` header, a traceback's
//! `File "..."` frame, a new `SomethingError:`. A line without one, after
//! a line with an error message, may be the rest of that message: broken
//! by the program (`AssertionError:` then the text), by a terminal's
//! wrapping or by a copy-paste (`Resource exhausted: Out` then `of memory
//! while trying to allocate ...`). [`continues_message`] tells the two
//! apart, so that the scan can read such a pair as one message.

use crate::timestamp::line_time;
use nom::branch::alt;
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{char, digit1, space1};
use nom::combinator::{eof, recognize};
use nom::sequence::{preceded, terminated};
use nom::{IResult, Parser};

/// Longest line taken as the rest of a message.
const MAX_CONTINUATION: usize = 512;

/// Whether `text` (rank prefix already removed) may continue the message
/// of the line before it: not blank, not too long, and not the start of a
/// record of its own.
pub fn continues_message(text: &str) -> bool {
    let t = text.trim_start();
    !t.is_empty() && t.len() <= MAX_CONTINUATION && !starts_record(t)
}

/// Whether `text` may be the rest of a line cut at a wrap width inside a
/// word or a number, or at a space (which then starts the rest): as
/// [`continues_message`], except that a first character a record often
/// starts with (a digit, a bracket) is only the cut's place (`block:
/// [420,` then `0,0], thread: ...`; `failed to allocate` then ` 7.35G
/// (7889485824 bytes)`). A time, a level, an NCCL header or a new
/// exception still start a record, and a rest indented further is not a
/// cut's.
pub fn continues_wrapped_message(text: &str) -> bool {
    let text = text.strip_prefix(' ').unwrap_or(text);
    !text.is_empty()
        && !text.starts_with(char::is_whitespace)
        && text.len() <= MAX_CONTINUATION
        && !starts_marked_record(text)
}

/// Whether `text` may be the rest of a line that a terminal or a paste
/// cut at a known width (the line before it was exactly that wide): as
/// [`continues_wrapped_message`], except that a rest of any length may
/// start with any word (`at some other API call`): only a time, a level,
/// an NCCL header, a traceback's own line, a new exception or a table's
/// row (`|`, `+`) start a record of their own.
pub fn rest_of_cut_line(text: &str) -> bool {
    let text = text.strip_prefix(' ').unwrap_or(text);
    !text.is_empty()
        && !text.starts_with(char::is_whitespace)
        && !text.starts_with(['|', '+'])
        && line_time(text).is_none()
        && nccl_header(text).is_err()
        && traceback_marker(text).is_err()
        && level(text).is_err()
        && exception_start(text).is_err()
}

/// Whether `line`, then `next`, are two lines a launcher or a collector
/// prefixed (`worker-1: `, `[rank0]: `, `(RayWorker pid=7) `, the prefixes
/// [`strip_rank_prefix`](crate::strip_rank_prefix) removes): `next` is then
/// a line of its own, not the rest of `line` cut at a terminal's width,
/// since a terminal puts no prefix in front of the rest of a line it
/// wrapped. Markdown quote markers (a paste quoted after it was wrapped)
/// are not prefixes.
pub fn both_prefixed(line: &str, next: &str) -> bool {
    launcher_prefixed(line) && launcher_prefixed(next)
}

/// Whether `text` starts with a launcher's or a collector's prefix, a
/// Markdown quote marker aside (see [`both_prefixed`]).
pub fn launcher_prefixed(text: &str) -> bool {
    let unquoted = crate::prefix::strip_quote_marker(text.trim_start_matches(' '));
    crate::prefix::strip_rank_prefix(unquoted).rest.len() < unquoted.len()
}

fn starts_record(t: &str) -> bool {
    let first = t.chars().next().unwrap_or(' ');
    first.is_ascii_digit()
        || matches!(
            first,
            '[' | '(' | '{' | '#' | '|' | '+' | '=' | '*' | '>' | '-'
        )
        || starts_marked_record(t)
}

/// A record's start by what it says rather than by its first character.
fn starts_marked_record(t: &str) -> bool {
    line_time(t).is_some()
        || nccl_header(t).is_ok()
        || marker(t).is_ok()
        || level(t).is_ok()
        || exception_start(t).is_ok()
}

/// `host:1234:5678 [0] `: the header of an NCCL debug line.
fn nccl_header(t: &str) -> IResult<&str, &str> {
    recognize((
        take_while1(|c: char| c != ':' && c != ' '),
        char(':'),
        digit1,
        char(':'),
        digit1,
        space1,
        char('['),
        digit1,
        char(']'),
    ))
    .parse(t)
}

/// The lines of a Python traceback (or a stack dump's `at ...` frame)
/// that are not a message.
fn marker(t: &str) -> IResult<&str, &str> {
    alt((traceback_marker, tag("at "))).parse(t)
}

/// The lines of a Python traceback that are not a message.
fn traceback_marker(t: &str) -> IResult<&str, &str> {
    alt((
        tag("File \""),
        tag("Traceback (most recent call last)"),
        tag("During handling of the above exception"),
        tag("The above exception was the direct cause"),
        tag("Original Traceback"),
    ))
    .parse(t)
}

/// A level word at the start: `INFO:`, `WARNING `, `ERROR]`.
fn level(t: &str) -> IResult<&str, &str> {
    terminated(level_word, alt((tag(":"), tag(" "), tag("]"), eof))).parse(t)
}

/// A logging level's word: `DEBUG`, `INFO`, `WARNING`, ...
pub(crate) fn level_word(t: &str) -> IResult<&str, &str> {
    alt((
        tag("DEBUG"),
        tag("INFO"),
        tag("WARNING"),
        tag("WARN"),
        tag("ERROR"),
        tag("CRITICAL"),
        tag("FATAL"),
    ))
    .parse(t)
}

/// `KeyError:`, `torch.OutOfMemoryError:`: a new exception's line.
pub(crate) fn exception_start(t: &str) -> IResult<&str, &str> {
    let mut name = take_while1(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    let (rest, word) = name.parse(t)?;
    let known = ["Error", "Exception", "Warning", "Exit", "Interrupt"];
    if !known.iter().any(|k| word.ends_with(k)) {
        return Err(nom::Err::Error(nom::error::Error::new(
            t,
            nom::error::ErrorKind::Tag,
        )));
    }
    preceded(char(':'), nom::combinator::rest).parse(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rest_of_a_broken_message_continues_it() {
        for line in [
            "of memory while trying to allocate 5520758552 bytes.",
            "The NVIDIA driver on your system is too old (found version 10010).",
            "  version from the URL: http://www.nvidia.com/Download/index.aspx",
            "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)",
        ] {
            assert!(continues_message(line), "{line}");
        }
    }

    #[test]
    fn a_line_that_starts_a_record_does_not() {
        for line in [
            "",
            "   ",
            "2019-06-13 01:17:08.886805: E external/xla/local_client.cc:672] x",
            "E1129 17:16:18.664318040 ProcessGroupNCCL.cpp:689] x",
            "node1:2038:2110 [1] NCCL INFO Channel 00/02",
            "File \"/opt/train.py\", line 3, in <module>",
            "Traceback (most recent call last):",
            "RuntimeError: CUDA error: out of memory",
            "torch.OutOfMemoryError: CUDA out of memory.",
            "WARNING: something",
            "INFO:root:step 3",
            "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed",
            "12%|███       | 3/25",
        ] {
            assert!(!continues_message(line), "{line:?}");
        }
        assert!(!continues_message(&"x".repeat(MAX_CONTINUATION + 1)));
    }

    #[test]
    fn the_rest_of_a_line_cut_at_a_known_width() {
        for rest in [
            "at some other API call, so the stacktrace below might be incorrect.",
            " 7.35G (7889485824 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY",
            "0,0], thread: [124,0,0] Assertion `t >= 0` failed.",
            "> ported.",
            "worker-1: ModuleNotFoundError: No module named 'model'",
            &"x".repeat(MAX_CONTINUATION + 1),
        ] {
            assert!(rest_of_cut_line(rest), "{rest}");
        }
        for line in [
            "",
            "    main()",
            "  File \"/opt/train.py\", line 3, in <module>",
            "RuntimeError: CUDA error: out of memory",
            "2019-06-13 01:17:08.886805: E external/xla/local_client.cc:672] x",
            "node1:2038:2110 [1] NCCL INFO Channel 00/02",
            "WARNING: something",
            "|   0  NVIDIA H200     On  |   00000000:19:00.0 Off |                    0 |",
        ] {
            assert!(!rest_of_cut_line(line), "{line:?}");
        }
    }

    #[test]
    fn two_prefixed_lines_are_two_lines() {
        for (line, next) in [
            (
                "worker-1:     from model.modeling_chatglm import X",
                "worker-1: ModuleNotFoundError: No module named 'model'",
            ),
            (
                "[rank3]:   File \"train.py\", line 8, in <module>",
                "[rank3]: main()",
            ),
            (
                "(RayTrainWorker pid=4242, ip=10.0.0.7) Loading",
                "(RayTrainWorker pid=4242, ip=10.0.0.7) shards",
            ),
            ("trainer-1  | step 2", "trainer-1  | step 3"),
        ] {
            assert!(both_prefixed(line, next), "{next:?}");
        }
        for (line, next) in [
            // A rest that only looks like a prefix, after an unprefixed line.
            (
                "NVIDIA-SMI has failed because it couldn't communicate with GPU",
                "0: NVIDIA A100",
            ),
            ("the output of node", "gpu07: is down"),
            ("> a quoted paste cut at the", "> width"),
        ] {
            assert!(!both_prefixed(line, next), "{next:?}");
        }
    }
}

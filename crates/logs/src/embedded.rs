//! A message embedded in a line that holds more than the message.
//!
//! Two shapes of paste hide an exception's line inside a longer one:
//!
//! - a traceback flattened onto one line (a paste outside a code block,
//!   a collector that joined the lines): `File "train.py", line 23, in
//!   <module> from transformers import X ModuleNotFoundError: No module
//!   named 'transformers'`;
//! - a JSON field holding the message, as torchelastic's `error.json` and
//!   structured loggers print it: `"message": "RendezvousTimeoutError: "`.
//!
//! [`embedded_message`] returns the message alone, so that rules written
//! for the exception's own line read it.

use crate::record::exception_start;
use nom::bytes::complete::escaped;
use nom::bytes::complete::tag;
use nom::character::complete::{anychar, char, none_of, space0};
use nom::combinator::opt;
use nom::sequence::{delimited, preceded};
use nom::{IResult, Parser};

/// The exception line a flattened traceback ends with, or the message a
/// JSON `"message"` field holds (its exception line, else its first
/// line), when `text` (rank prefix removed) has one.
pub fn embedded_message(text: &str) -> Option<String> {
    flattened_exception(text)
        .map(str::to_owned)
        .or_else(|| json_message(text))
}

/// After the last frame of a flattened traceback, the first word that
/// starts an exception line (`ModuleNotFoundError:`), and what follows.
fn flattened_exception(text: &str) -> Option<&str> {
    let frame = text.rfind("\", line ")?;
    text.get(..frame)?.rfind("File \"")?;
    let after = text.get(frame..)?;
    let mut at = 0;
    for word in after.split_inclusive(char::is_whitespace) {
        let start = at;
        at += word.len();
        if start > 0 && exception_start(word.trim_end()).is_ok() {
            return after.get(start..).map(str::trim_end);
        }
    }
    None
}

/// `"message": "..."` as a whole line (a trailing comma allowed): the
/// string's exception line, else its first non-blank line.
fn json_message(text: &str) -> Option<String> {
    let (rest, quoted) = message_field(text.trim()).ok()?;
    if !matches!(rest.trim(), "" | ",") {
        return None;
    }
    let value: String = serde_json::from_str(quoted).ok()?;
    let lines = || value.lines().map(str::trim).filter(|l| !l.is_empty());
    let line = lines()
        .rev()
        .find(|l| exception_start(l).is_ok())
        .or_else(|| lines().next())?;
    Some(line.to_owned())
}

/// `"message": ` then a JSON string, returned with its quotes.
fn message_field(t: &str) -> IResult<&str, &str> {
    preceded(
        (tag("\"message\""), space0, char(':'), space0),
        nom::combinator::recognize(delimited(char('"'), string_body, char('"'))),
    )
    .parse(t)
}

/// The inside of a JSON string: anything but a quote or a backslash, a
/// backslash taking the next character with it.
fn string_body(t: &str) -> IResult<&str, &str> {
    opt(escaped(none_of("\\\""), '\\', anychar))
        .map(Option::unwrap_or_default)
        .parse(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flattened_traceback_ends_with_its_exception() {
        assert_eq!(
            embedded_message(
                "File \"train.py\", line 23, in <module> from transformers import DeformableDetrForObjectDetection ModuleNotFoundError: No module named 'transformers'"
            )
            .as_deref(),
            Some("ModuleNotFoundError: No module named 'transformers'")
        );
        assert_eq!(
            embedded_message(
                "Traceback (most recent call last): File \"a.py\", line 1, in <module> main() File \"a.py\", line 9, in main x = torch.zeros(1).cuda() RuntimeError: CUDA error: no kernel image is available for execution on the device"
            )
            .as_deref(),
            Some("RuntimeError: CUDA error: no kernel image is available for execution on the device")
        );
    }

    #[test]
    fn a_json_message_field() {
        assert_eq!(
            embedded_message("    \"message\": \"RendezvousTimeoutError: \",").as_deref(),
            Some("RendezvousTimeoutError:")
        );
        assert_eq!(
            embedded_message(
                "\"message\": \"Traceback (most recent call last):\\n  File \\\"t.py\\\", line 3, in <module>\\nRuntimeError: CUDA error: out of memory\\n\""
            )
            .as_deref(),
            Some("RuntimeError: CUDA error: out of memory")
        );
    }

    #[test]
    fn ordinary_lines_embed_nothing() {
        for line in [
            "RuntimeError: CUDA error: out of memory",
            "  File \"train.py\", line 23, in <module>",
            "File \"train.py\", line 23, in <module> model.cuda()",
            "\"message\": \"unterminated",
            "\"message\": \"ok\", \"code\": 3",
            "step 3 loss 0.25",
        ] {
            assert_eq!(embedded_message(line), None, "{line}");
        }
    }
}

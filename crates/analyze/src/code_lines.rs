//! Lines of Python code pasted among a log's lines.
//!
//! A report in an issue thread often holds the code that failed next to
//! its output: the training loop itself, whose strings name the failures
//! it handles (`print("CUDA out of memory, skipping batch")`,
//! `if "out of memory" in str(e):`). What such a line says is the
//! program's text, not something that happened, so no rule reads it. A
//! frame's source line inside a traceback is recognised by the traceback
//! reader instead, and so is a source line that `rich` prints inside a
//! traceback's box, with its line number (`│   214 │ raise ... │`). An
//! interpreter's input (`>>> torch.cuda.is_available()`) is left to the
//! rules: with the output after it, it is what happened.

/// Words that start a statement whose strings are the program's own:
/// output calls, raises, checks and the branches that test messages.
const STATEMENTS: &[&str] = &[
    "print(",
    "raise ",
    "assert ",
    "return ",
    "yield ",
    "if ",
    "elif ",
    "while ",
    "except ",
    "warnings.warn(",
    "sys.exit(",
    "os.environ[",
    "logger.",
    "logging.",
    "log.",
];

/// Whether `text` (prefix removed) is a line of Python code: a statement
/// of [`STATEMENTS`] holding a string and ending as a statement does
/// (`)`, `:`, `]` or a string's quote, perhaps with a comment after it).
pub(crate) fn is_python_code(text: &str) -> bool {
    let bare = text.trim();
    if !STATEMENTS.iter().any(|s| bare.starts_with(s)) {
        return false;
    }
    let code = without_comment(bare).trim_end();
    let holds_string = code.contains('"') || code.contains('\'');
    holds_string && code.ends_with([')', ':', ']', '"', '\''])
}

/// Whether `text` (prefix removed) is a source line of a `rich`
/// traceback: a box's left edge, the line number (`❱` marks the failing
/// line), then the number column's edge (`│ ❱ 214 │ ...`).
pub(crate) fn is_rich_frame_source(text: &str) -> bool {
    let Some(rest) = text.trim_start().strip_prefix('│') else {
        return false;
    };
    let rest = rest.trim_start();
    let rest = rest.strip_prefix('❱').map_or(rest, str::trim_start);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0
        && rest
            .get(digits..)
            .is_some_and(|after| after.trim_start().starts_with('│'))
}

/// `code` up to a `#` that is outside any string.
fn without_comment(code: &str) -> &str {
    let mut quote = None;
    for (i, c) in code.char_indices() {
        match (quote, c) {
            (None, '#') => return &code[..i],
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    code
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn statements_that_hold_a_programs_strings_are_code() {
        for line in [
            "print(\"CUDA out of memory, skipping batch\")",
            "        if \"out of memory\" in str(e):",
            "    raise RuntimeError(\"CUDA error: device-side assert triggered\")",
            "logger.warning('NCCL timeout, retrying')  # the watchdog",
            "os.environ[\"NCCL_IB_DISABLE\"] = \"1\"",
        ] {
            assert!(is_python_code(line), "{line}");
        }
    }

    #[test]
    fn messages_are_not_code() {
        for line in [
            "RuntimeError: CUDA error: out of memory",
            "if you are running on a cluster, check NCCL_SOCKET_IFNAME",
            "print the shapes of the inputs to find the mismatch",
            "raise the limit with --shm-size (\"docker run\")!",
            "Assertion `srcIndex < srcSelectDimSize` failed.",
            "logging to wandb",
        ] {
            assert!(!is_python_code(line), "{line}");
        }
    }

    #[test]
    fn a_rich_tracebacks_numbered_source_lines_are_code() {
        for line in [
            "│   214 │   │   │   │   \"libcudart functions unavailable. It looks like you have a broken build?   │",
            "│ ❱ 2066 │   │   │   raise RuntimeError(\"CUDA error: out of memory\")           │",
            "  │   88 │ loss = model(batch)                                   │",
        ] {
            assert!(is_rich_frame_source(line), "{line}");
        }
        for line in [
            "│ /usr/lib/python3.10/site-packages/torch/cuda/__init__.py:214 in _lazy_init │",
            "│ │ device = 0 │ │",
            "RuntimeError: CUDA error: out of memory",
            "│",
            "│ 12",
        ] {
            assert!(!is_rich_frame_source(line), "{line}");
        }
    }
}

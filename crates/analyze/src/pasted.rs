//! Reading text as users paste it: the indentation a pasted block
//! shares, and lines a terminal or a paste cut at a wrap width.

use coroner_ingest::clean_line;
use coroner_logs::{continues_message, continues_wrapped_message, strip_rank_prefix};
use coroner_rules::{is_hard_wrapped, Line};

/// Indentation of a pasted block removed at most.
const MAX_INDENT: usize = 8;

/// The spaces (or tabs) every non-blank line of `bytes` starts with once cleaned
/// (an indented paste), and those every one starts with after its
/// launcher and collector prefixes (a paste indented inside a time
/// prefix), at most [`MAX_INDENT`] each. Nearly every log settles both on
/// its first line.
pub(crate) fn shared_indent(bytes: &[u8]) -> Indent {
    let mut shared = Indent {
        outer: MAX_INDENT,
        inner: MAX_INDENT,
    };
    let mut blank = true;
    let mut cleaned = Vec::new();
    for raw in bytes.split(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(clean_line(raw, &mut cleaned));
        let body = text.trim_start_matches([' ', '\t']);
        if body.trim().is_empty() {
            continue;
        }
        blank = false;
        let rest = strip_rank_prefix(body).rest;
        shared.outer = shared.outer.min(text.len() - body.len());
        shared.inner = shared
            .inner
            .min(rest.len() - rest.trim_start_matches([' ', '\t']).len());
        if shared == Indent::default() {
            break;
        }
    }
    if blank {
        Indent::default()
    } else {
        shared
    }
}

/// Indentation shared by every line of an input: see [`shared_indent`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Indent {
    /// In front of the whole line.
    pub(crate) outer: usize,
    /// After the line's prefixes.
    pub(crate) inner: usize,
}

/// `text` without up to `indent` leading spaces or tabs.
pub(crate) fn dedent(text: &str, indent: usize) -> &str {
    let spaces = text
        .bytes()
        .take(indent)
        .take_while(|&b| b == b' ' || b == b'\t')
        .count();
    text.get(spaces..).unwrap_or(text)
}

/// Whether `line` may be the rest of a line cut at a wrap width: the
/// whole line (a wrap leaves no prefix or time in front of the rest) reads
/// as [`continues_wrapped_message`].
fn continues_wrapped_line(line: &Line<'_>) -> bool {
    line.text.len() == line.shown.len() && continues_wrapped_message(line.shown)
}

/// Whether `line` continues the message of the line before it, shown as
/// `before`: as any continuation does, or as the rest of `before` cut at
/// a wrap width (inside a word or a number, or at a space).
pub(crate) fn continues_line(before: &str, line: &Line<'_>) -> bool {
    let cut = is_hard_wrapped(before)
        && !before.ends_with(char::is_whitespace)
        && continues_wrapped_line(line);
    continues_message(line.text) || cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indent(text: &str) -> (usize, usize) {
        let found = shared_indent(text.as_bytes());
        (found.outer, found.inner)
    }

    #[test]
    fn the_indentation_every_line_shares() {
        assert_eq!(indent("    a\n      b\n\n   \n    c\n"), (4, 0));
        assert_eq!(indent("\x1b[0m  a\n  b\n"), (2, 0));
        assert_eq!(indent("> \t\n>     a\n>     b\n"), (4, 0));
        assert_eq!(
            indent(
                "2024-05-01 12:00:00,123 - INFO -     a\n2024-05-01 12:00:00,124 - INFO -   b\n"
            ),
            (0, 2)
        );
        assert_eq!(indent("step 1\n    step 2\n"), (0, 0));
        assert_eq!(indent("\n\n"), (0, 0));
        assert_eq!(indent("            a\n"), (MAX_INDENT, 0));
        assert_eq!(dedent("      x", 4), "  x");
        assert_eq!(dedent("  x", 4), "x");
        assert_eq!(dedent("\tx", 4), "x");
        assert_eq!(indent("\ta\n\t  b\n"), (1, 0));
    }
}

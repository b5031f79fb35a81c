//! Reading text as users paste it: the indentation a pasted block
//! shares, and lines a terminal or a paste cut at a wrap width.

use coroner_ingest::{clean_line, lossy, quote_markers};
use coroner_logs::{
    both_prefixed, continues_message, continues_wrapped_message, launcher_prefixed,
    rest_of_cut_line, strip_rank_prefix,
};
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
        let text = lossy(clean_line(raw, &mut cleaned));
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

/// Lines looked at to tell whether an input was hard-wrapped.
const WRAP_SAMPLE_LINES: usize = 4096;
/// Narrowest wrap width recognised.
const MIN_WRAP_WIDTH: usize = 40;
/// The widths terminals usually have, at which one cut line in a short
/// paste is read as a wrap.
const TERMINAL_WIDTHS: [usize; 4] = [80, 100, 120, 132];
/// The most lines a paste may have for one cut line to be read as a wrap.
const SHORT_PASTE_LINES: usize = 40;

/// The width at which a terminal or a paste cut every line of `bytes`
/// (the start of an input), if it did: then no line is wider; the lines
/// exactly that wide are not all one line with other numbers; at least
/// two thirds of them (two at least) are followed by a line that reads as
/// the rest of a cut line ([`rest_of_cut_line`]); and one at least was cut
/// inside a word or a number, or after a word's space. Lines of equal
/// width that a program wrote (NCCL's channel lines, a kernel's assertion
/// from many threads, a table's rows, a rule of dashes above a header)
/// fail one of these. Only the lines that wide are copied. `outer` is
/// the indentation every line shares (a block indented after it was
/// wrapped), which a rest is read without.
pub(crate) fn wrap_width(bytes: &[u8], outer: usize) -> Option<usize> {
    let mut cleaned = Vec::new();
    let raws: Vec<&[u8]> = lines_of(bytes).take(WRAP_SAMPLE_LINES).collect();
    if raws.iter().all(|raw| raw.len() < MIN_WRAP_WIDTH) {
        return None;
    }
    // Cleaning never lengthens a line, so its bytes bound its width: only
    // the longest lines are cleaned, down to the widest width found.
    let mut longest: Vec<usize> = (0..raws.len()).collect();
    longest.sort_unstable_by_key(|&i| std::cmp::Reverse(raws[i].len()));
    let mut width = 0;
    let mut widest = Vec::new();
    for i in longest {
        if raws[i].len() < width {
            break;
        }
        let w = text_width(clean_line(raws[i], &mut cleaned));
        width = width.max(w);
        widest.push((i, w));
    }
    if width < MIN_WRAP_WIDTH {
        return None;
    }
    widest.retain(|&(i, w)| w == width && i + 1 < raws.len());
    widest.sort_unstable();
    let mut text = |i: usize| {
        let line = lossy(clean_line(raws[i], &mut cleaned));
        dedent(&line, outer).to_owned()
    };
    // A line whose next line carries the same kind of launcher prefix is
    // followed by a line of its own, whatever its width: such pairs say
    // nothing about a wrap.
    let full: Vec<(String, String)> = widest
        .iter()
        .map(|&(i, _)| (text(i), text(i + 1)))
        .filter(|(line, rest)| !both_prefixed(line, rest))
        .collect();
    // One cut line is a wrap only at a terminal's usual width, in a short
    // paste, cut inside a word.
    if let [(line, rest)] = full.as_slice() {
        let short = raws.len() <= SHORT_PASTE_LINES;
        let usual = TERMINAL_WIDTHS.contains(&width);
        return (short && usual && rest_of_cut_line(rest) && cut_in_text(line, rest))
            .then_some(width);
    }
    if full.len() < 2 {
        return None;
    }
    let cut = full
        .iter()
        .filter(|(_, rest)| rest_of_cut_line(rest))
        .count();
    let templates: std::collections::HashSet<String> =
        full.iter().map(|(line, _)| without_digits(line)).collect();
    let in_text = full.iter().any(|(line, rest)| cut_in_text(line, rest));
    (templates.len() >= 2 && in_text && cut >= 2 && cut * 3 >= full.len() * 2).then_some(width)
}

/// The lines of `bytes`, split at each newline: the last one is what
/// follows the last newline, empty when `bytes` end with one.
fn lines_of(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    ends.map(move |end| {
        let line = &bytes[start..end];
        start = end + 1;
        line
    })
}

/// The characters of a cleaned line as [`lossy`] decodes it: its length
/// when it is ASCII, as nearly every log line is.
fn text_width(cleaned: &[u8]) -> usize {
    if cleaned.is_ascii() {
        cleaned.len()
    } else {
        lossy(cleaned).chars().count()
    }
}

/// Whether `line`, then `rest`, look like text cut inside a word or a
/// number, or just after one word's space, before the next word.
fn cut_in_text(line: &str, rest: &str) -> bool {
    let mut end = line.chars().rev();
    let last = end.next();
    let word_before = match last {
        Some(' ') => end.next().is_some_and(|c| !c.is_whitespace()),
        Some(c) => c.is_alphanumeric(),
        None => false,
    };
    word_before && rest.chars().next().is_some_and(char::is_alphanumeric)
}

/// `text` with its digits replaced by `0`: the template of a line that
/// a program repeats with other numbers.
fn without_digits(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect()
}

/// The end of the line of `bytes` starting at `start` once the lines a
/// wrap at `width` cut from it are put back (the offset of its last
/// newline or of the end), and how many lines it spans, at most
/// [`MAX_WRAPPED_LINES`]. Each line is cleaned once.
pub(crate) fn unwrapped_end(
    bytes: &[u8],
    start: usize,
    width: usize,
    outer: usize,
) -> (usize, u64) {
    let line_end = |at: usize| memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
    let mut cleaned = Vec::new();
    let mut end = line_end(start);
    let first = clean_line(&bytes[start..end], &mut cleaned);
    let mut full = text_width(first) == width;
    // After a prefixed first line, a prefixed line starts a record of its
    // own.
    let after_prefixed = full && launcher_prefixed(&lossy(first));
    let mut lines = 1;
    while full && end < bytes.len() && lines < MAX_WRAPPED_LINES {
        let next_end = line_end(end + 1);
        let next = lossy(clean_line(&bytes[end + 1..next_end], &mut cleaned));
        if !rest_of_cut_line(dedent(&next, outer)) || (after_prefixed && launcher_prefixed(&next)) {
            break;
        }
        full = text_width(next.as_bytes()) == width;
        end = next_end;
        lines += 1;
    }
    (end, lines)
}

/// Lines put back together into one at most.
const MAX_WRAPPED_LINES: u64 = 64;

/// `raw` (lines of an input) with the line breaks (and carriage returns)
/// between them removed: the line a wrap cut. A paste quoted or indented
/// (by `outer`) after it was wrapped has a quote marker or the indentation
/// in front of each rest, which go too.
pub(crate) fn unwrapped(raw: &[u8], outer: usize) -> Vec<u8> {
    let mut whole = Vec::with_capacity(raw.len());
    let mut parts = raw.split(|&b| b == b'\n').peekable();
    let mut first = true;
    while let Some(mut part) = parts.next() {
        let (indent, markers) = quote_markers(part);
        if !first {
            part = &part[if markers > indent {
                markers
            } else {
                indent.min(outer)
            }..];
        }
        first = false;
        let cut = parts.peek().is_some();
        whole.extend_from_slice(if cut {
            part.strip_suffix(b"\r").unwrap_or(part)
        } else {
            part
        });
    }
    whole
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
#[allow(clippy::unwrap_used)]
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

    /// `text`'s lines cut every `width` characters, as a terminal does.
    fn wrapped(text: &str, width: usize) -> String {
        let mut out = String::new();
        for line in text.lines() {
            let chars: Vec<char> = line.chars().collect();
            for chunk in chars.chunks(width) {
                out.extend(chunk);
                out.push('\n');
            }
            if chars.is_empty() {
                out.push('\n');
            }
        }
        out
    }

    const LOG: &str = "Traceback (most recent call last):
  File \"/home/user/projects/detection/tools/train.py\", line 120, in <module>
    main()
RuntimeError: CUDA error: an illegal memory access was encountered. CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
";

    #[test]
    fn a_terminal_wrap_is_recognised_by_its_width() {
        let cut = wrapped(LOG, 60);
        assert_eq!(wrap_width(cut.as_bytes(), 0), Some(60));
        let start = cut.find("RuntimeError").unwrap();
        let (end, lines) = unwrapped_end(cut.as_bytes(), start, 60, 0);
        assert_eq!(lines, 4);
        assert_eq!(
            String::from_utf8(unwrapped(&cut.as_bytes()[start..end], 0)).unwrap(),
            LOG.lines().last().unwrap()
        );
        // The frame's line is put back from its two parts, and the
        // indented line after it stays a line of its own.
        let frame = cut.find("  File").unwrap();
        assert_eq!(unwrapped_end(cut.as_bytes(), frame, 60, 0).1, 2);
        assert_eq!(wrap_width(LOG.as_bytes(), 0), None);
    }

    #[test]
    fn a_wrap_quoted_after_it_was_made_is_put_back_without_its_markers() {
        let cut = wrapped(LOG, 60);
        let quoted: String = cut.lines().map(|l| format!("> {l}\n")).collect();
        assert_eq!(wrap_width(quoted.as_bytes(), 0), Some(60));
        let start = quoted.find("RuntimeError").unwrap();
        let (end, _) = unwrapped_end(quoted.as_bytes(), start, 60, 0);
        assert_eq!(
            String::from_utf8(unwrapped(&quoted.as_bytes()[start..end], 0)).unwrap(),
            LOG.lines().last().unwrap()
        );
    }

    #[test]
    fn a_wrap_indented_after_it_was_made_is_put_back_without_the_indentation() {
        let cut = wrapped(LOG, 60);
        let indented: String = cut.lines().map(|l| format!("    {l}\n")).collect();
        assert_eq!(wrap_width(indented.as_bytes(), 4), Some(64));
        let start = indented.find("    RuntimeError").unwrap();
        let (end, lines) = unwrapped_end(indented.as_bytes(), start, 64, 4);
        assert_eq!(lines, 4);
        assert_eq!(
            String::from_utf8(unwrapped(&indented.as_bytes()[start..end], 4)).unwrap(),
            format!("    {}", LOG.lines().last().unwrap())
        );
    }

    /// One line cut in a word at a terminal's usual width, in a short
    /// paste, is a wrap; at another width, cut between words, or in a
    /// long paste, it is not.
    #[test]
    fn one_cut_line_is_a_wrap_only_at_a_terminals_width() {
        let line = "F1208 15:16:46.872542 15643 pooling_layer.cu:212] Check failed: error == cudaSuccess (8 vs. 0)  invalid device function";
        let at = |width: usize| format!("{}\n{}\n", &line[..width], &line[width..]);
        assert_eq!(wrap_width(at(100).as_bytes(), 0), Some(100));
        assert_eq!(wrap_width(at(80).as_bytes(), 0), Some(80));
        assert_eq!(wrap_width(at(101).as_bytes(), 0), None);
        // Cut after a word and its space, the next line starting a record.
        let record = format!("{}\n[2024-05-01 12:00:00] INFO next step\n", &line[..100]);
        assert_eq!(wrap_width(record.as_bytes(), 0), None);
        let long = "step 1\n".repeat(60) + &at(100);
        assert_eq!(wrap_width(long.as_bytes(), 0), None);
    }

    #[test]
    fn lines_a_program_made_equally_wide_are_not_a_wrap() {
        let channels = "gpu4:3590:3597 [0] NCCL INFO Channel 00/0 : 0[90000] -> 1[1000] [send] via NET/Socket/0
gpu4:3590:3597 [0] NCCL INFO Channel 01/0 : 0[90000] -> 1[1000] [send] via NET/Socket/1
gpu4:3590:3597 [0] NCCL INFO Channel 02/0 : 0[90000] -> 1[1000] [send] via NET/Socket/2
";
        assert_eq!(wrap_width(channels.as_bytes(), 0), None);
        let repeated =
            "WARNING: the same long warning that several processes printed at once, word for word
and its second line
WARNING: the same long warning that several processes printed at once, word for word
and its second line
";
        assert_eq!(wrap_width(repeated.as_bytes(), 0), None);
        let asserts = "/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.
/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [6,0,0] Assertion `t >= 0 && t < n_classes` failed.
/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [7,0,0] Assertion `t >= 0 && t < n_classes` failed.
Traceback (most recent call last):
";
        assert_eq!(wrap_width(asserts.as_bytes(), 0), None);
        let notebook = "---------------------------------------------------------------------------
OutOfMemoryError                          Traceback (most recent call last)
/tmp/ipykernel_36/773422404.py in <cell line: 0>()
";
        assert_eq!(wrap_width(notebook.as_bytes(), 0), None);
        let table = "+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPU: 1                                  |
|                           | Fail - GPU: 0                                  |
";
        assert_eq!(wrap_width(table.as_bytes(), 0), None);
    }
}

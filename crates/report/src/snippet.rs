//! An evidence line and its neighbours as a miette source, numbered as in
//! the original input, cut to fit the terminal.

use coroner_model::Evidence;
use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

/// A few lines of an input starting at `first_line`.
#[derive(Debug)]
pub(crate) struct Snippet {
    name: String,
    text: String,
    /// 0-based line number of the snippet's first line in the input.
    first_line: usize,
    /// Where the evidence's match sits in `text`.
    pub(crate) span: SourceSpan,
    /// Bytes of the evidence line cut from its start, and the bytes of the
    /// `…` shown instead: columns are corrected by both so that they count
    /// in the real line.
    column_shift: (usize, usize),
    /// Column (in characters) under the middle of the match, where miette
    /// hangs a label.
    pub(crate) label_column: usize,
}

impl Snippet {
    /// The evidence line with its context, each line at most `cols`
    /// characters; the evidence line's window is moved to show the match.
    pub(crate) fn new(evidence: &Evidence, cols: usize) -> Snippet {
        let ctx = evidence.context.clone().unwrap_or_default();
        let mut text = String::new();
        for line in &ctx.before {
            text.push_str(&window(line, 0, cols).0);
            text.push('\n');
        }
        let line = evidence.text.as_str();
        let (from, to) = ctx
            .span
            .filter(|&(a, b)| {
                a <= b && b <= line.len() && line.is_char_boundary(a) && line.is_char_boundary(b)
            })
            .unwrap_or((0, line.len()));
        let start_char = line[..from].chars().count();
        let skip = if start_char + 12 > cols {
            start_char.saturating_sub(12)
        } else {
            0
        };
        let (shown, byte_start, prefix, kept) = window(line, skip, cols);
        // Both ends inside the kept text, never inside a marker.
        let end = byte_start + kept;
        let shown_from = from.clamp(byte_start, end) - byte_start + prefix;
        let shown_to = (to.clamp(byte_start, end) - byte_start + prefix).max(shown_from);
        let start = text.len();
        text.push_str(&shown);
        for line in &ctx.after {
            text.push('\n');
            text.push_str(&window(line, 0, cols).0);
        }
        let first_line = usize::try_from(evidence.line)
            .unwrap_or(usize::MAX)
            .saturating_sub(1 + ctx.before.len());
        Snippet {
            name: evidence.input.clone(),
            text,
            first_line,
            span: SourceSpan::from(start + shown_from..start + shown_to),
            column_shift: (byte_start, prefix),
            label_column: shown[..shown_from].chars().count()
                + shown[shown_from..shown_to].chars().count() / 2,
        }
    }
}

/// At most `cols` characters of `line` starting at character `skip`, with
/// `…` marking what was cut. Returns the text, the byte offset in `line`
/// where the kept part starts, the byte length of the leading marker and
/// the byte length of the kept part of `line`.
fn window(line: &str, skip: usize, cols: usize) -> (String, usize, usize, usize) {
    let start = line.char_indices().nth(skip).map_or(line.len(), |(i, _)| i);
    let rest = &line[start..];
    let mut out = String::new();
    let prefix = if start > 0 {
        out.push('…');
        '…'.len_utf8()
    } else {
        0
    };
    let keep = cols.saturating_sub(usize::from(start > 0) + 1);
    let kept = match rest.char_indices().nth(keep) {
        None => {
            out.push_str(rest);
            rest.len()
        }
        Some((cut, _)) => {
            out.push_str(&rest[..cut]);
            out.push('…');
            cut
        }
    };
    (out, start, prefix, kept)
}

impl SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self.text.as_str().read_span(span, before, after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            (inner.column() + self.column_shift.0).saturating_sub(self.column_shift.1),
            inner.line_count(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cut_long_lines() {
        assert_eq!(window("abcdef", 0, 10).0, "abcdef");
        assert_eq!(window("abcdef", 0, 4).0, "abc…");
        let (s, start, prefix, kept) = window("abcdef", 2, 10);
        assert_eq!((s.as_str(), start, prefix, kept), ("…cdef", 2, 3, 4));
    }

    #[test]
    fn a_cut_line_ending_in_a_wide_character_is_shown_whole_or_marked() {
        // An evidence line that already ends in `…` (capped), shown in a
        // window narrower than it, with no span: the marker the window
        // adds must not be sliced.
        for cols in 1..90 {
            let evidence = Evidence {
                input: "x.log".to_owned(),
                line: 3,
                text: format!("File \"/srv/x/fh_hang.py\", line 10 in load_shar{}", '…'),
                context: None,
            };
            let snippet = Snippet::new(&evidence, cols);
            assert!(snippet.text.is_char_boundary(snippet.span.offset()));
        }
    }
}

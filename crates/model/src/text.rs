//! Shortening text for reports.

/// The first `max` characters of `s`, with `…` after them when cut.
pub fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => format!("{}…", s.get(..at).unwrap_or_default()),
    }
}

/// `s` with every character that could act on a terminal, a CI runner or
/// a renderer made visible and inert: C0 controls but the tab, and DEL,
/// in caret notation (`^[`, `^M`, `^H`, `^?`); C1 controls and the
/// invisible characters that reorder or hide text (bidi overrides and
/// isolates, zero-width marks, the byte-order mark) as `\u{…}`. Text that
/// came from an input goes through this before any report holds it.
pub fn inert(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\t' => out.push(c),
            '\u{0}'..='\u{1f}' => {
                out.push('^');
                out.push(char::from(c as u8 + 0x40));
            }
            '\u{7f}' => out.push_str("^?"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A path as reports show it: [`inert`], so that a file name cannot act
/// on a terminal or a CI runner either, and bytes that are not UTF-8 as
/// `\xff`, so that two such names stay distinct.
pub fn shown_path(path: &std::path::Path) -> String {
    shown_bytes(path.as_os_str().as_encoded_bytes())
}

/// Bytes from an input as reports show them: their UTF-8 text made
/// [`inert`], every byte that is not UTF-8 as `\xNN`.
pub fn shown_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(&inert(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Text about to leave coroner (a report, a message on stderr) with
/// anything that could still act made inert: the last guard behind
/// [`inert`], which input text went through when it entered a report.
/// Line feeds and tabs are kept; so are coroner's own colours (SGR
/// sequences, `ESC [ digits m`) when `colour` is set. Every other control
/// is shown in caret notation and the invisible characters as `\uXXXX`,
/// which is also a valid escape inside a JSON string.
///
/// Nor can a CI runner read a command in it: a line that starts with `::`
/// after any white space (a GitHub Actions workflow command) has that
/// first `:` shown as `\u003a`, and the second `#` of `##[`, `##vso[` or
/// any `##` and ASCII letters before a `[` (the runners' older syntax,
/// obeyed anywhere in a line) as `\u0023`.
pub fn inert_output(text: &str, colour: bool) -> std::borrow::Cow<'_, str> {
    no_commands(inert_controls(text, colour), false)
}

/// [`inert_output`] for the `github` format, whose own lines are workflow
/// commands: a line may start with `::` (its renderer escapes the line
/// breaks of whatever text it puts in one); the older syntax is still
/// shown.
pub fn inert_commands_output(text: &str) -> std::borrow::Cow<'_, str> {
    no_commands(inert_controls(text, false), true)
}

/// `text` with no workflow command that a runner would obey (see
/// [`inert_output`]); lines that start with `::` are kept when `own_lines`.
fn no_commands(text: std::borrow::Cow<'_, str>, own_lines: bool) -> std::borrow::Cow<'_, str> {
    let starts = |line: &str| {
        !own_lines
            && line
                .trim_start_matches(char::is_whitespace)
                .starts_with("::")
    };
    if !text
        .split('\n')
        .any(|line| starts(line) || legacy_at(line).is_some())
    {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, mut line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if starts(line) {
            let indent = line.len() - line.trim_start_matches(char::is_whitespace).len();
            out.push_str(&line[..indent]);
            out.push_str("\\u003a");
            line = &line[indent + 1..];
        }
        while let Some(at) = legacy_at(line) {
            out.push_str(&line[..at + 1]);
            out.push_str("\\u0023");
            line = &line[at + 2..];
        }
        out.push_str(line);
    }
    std::borrow::Cow::Owned(out)
}

/// Where in `line` a runner's older command syntax starts: `##`, ASCII
/// letters (none for GitHub's `##[`, `vso` for Azure's), then `[`.
fn legacy_at(line: &str) -> Option<usize> {
    line.match_indices('#').map(|(at, _)| at).find(|&at| {
        line[at + 1..].strip_prefix('#').is_some_and(|rest| {
            rest.trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .starts_with('[')
        })
    })
}

/// [`inert_output`] but for workflow commands.
fn inert_controls(text: &str, colour: bool) -> std::borrow::Cow<'_, str> {
    let acts = |c: char| c != '\n' && needs_escape(c);
    if !text.chars().any(acts) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let len = c.len_utf8();
        if c == '\x1b' && colour {
            if let Some(n) = sgr_len(rest) {
                out.push_str(&rest[..n]);
                rest = &rest[n..];
                continue;
            }
        }
        match c {
            '\n' | '\t' => out.push(c),
            '\u{0}'..='\u{1f}' => {
                out.push('^');
                out.push(char::from(c as u8 + 0x40));
            }
            '\u{7f}' => out.push_str("^?"),
            c if needs_escape(c) => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
        rest = &rest[len..];
    }
    std::borrow::Cow::Owned(out)
}

/// The length of the SGR sequence (`ESC [ 0-9; m`) `s` starts with.
fn sgr_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\x1b[")?;
    let params = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (body.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
}

/// [`inert`], then [`cap_chars`].
pub fn inert_capped(s: &str, max: usize) -> String {
    cap_chars(&inert(s), max)
}

fn needs_escape(c: char) -> bool {
    (c < ' ' && c != '\t')
        || ('\u{7f}'..='\u{9f}').contains(&c)
        || matches!(
            c,
            '\u{61c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_invisible_marks_are_shown_not_obeyed() {
        assert_eq!(inert("plain\ttext"), "plain\ttext");
        assert!(matches!(inert("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(inert("a\x1b[2Jb"), "a^[[2Jb");
        assert_eq!(inert("x\ry\x08\x07\0\x0b\x0c\x7f"), "x^My^H^G^@^K^L^?");
        assert_eq!(inert("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(inert("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(
            inert("a\u{200b}b\u{2066}c\u{feff}"),
            "a\\u{200b}b\\u{2066}c\\u{feff}"
        );
        assert_eq!(inert("line\nnext"), "line^Jnext");
        assert_eq!(inert_capped("a\rbcdef", 4), "a^Mb…");
    }

    #[test]
    fn bytes_that_are_not_utf8_stay_distinct() {
        assert_eq!(shown_bytes(b"a\xffb\xfe\x1b"), "a\\xffb\\xfe^[");
        assert_ne!(shown_bytes(b"a\xff"), shown_bytes(b"a\xfe"));
    }

    #[test]
    fn output_keeps_lines_and_own_colours_only() {
        assert_eq!(inert_output("a\nb\tc", false), "a\nb\tc");
        assert_eq!(
            inert_output("\x1b[1;31mred\x1b[0m", true),
            "\x1b[1;31mred\x1b[0m"
        );
        assert_eq!(inert_output("\x1b[1;31mred", false), "^[[1;31mred");
        assert_eq!(
            inert_output("\x1b[2J\x1b]52;c;x\x07", true),
            "^[[2J^[]52;c;x^G"
        );
        assert_eq!(inert_output("\u{9b}2J\r", true), "\\u009b2J^M");
    }

    #[test]
    fn output_starts_no_workflow_command() {
        assert_eq!(inert_output("a::b\n c :: d", false), "a::b\n c :: d");
        assert_eq!(
            inert_output("ok\n  ::error::x\n\u{a0}::add-mask::y", false),
            "ok\n  \\u003a:error::x\n\u{a0}\\u003a:add-mask::y"
        );
        assert_eq!(
            inert_output("x ##[error]y ##vso[task]z #[a] ## [b] ###[c]", false),
            "x #\\u0023[error]y #\\u0023vso[task]z #[a] ## [b] ##\\u0023[c]"
        );
        assert_eq!(
            inert_commands_output("::error file=a::m ##[error]\n::notice::n"),
            "::error file=a::m #\\u0023[error]\n::notice::n"
        );
    }
}

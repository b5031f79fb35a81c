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
/// on a terminal or a CI runner either.
pub fn shown_path(path: &std::path::Path) -> String {
    inert(&path.display().to_string()).into_owned()
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
}

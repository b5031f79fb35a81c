//! Text whose line ends were written as `\n`.
//!
//! A program's output pasted as a string rather than as lines: Python's
//! `repr` of it (`b'Traceback (most recent call last):\n  File ...'`), a
//! JSON value (`{"detail": "...\n..."}` from a server's error response, a
//! job API's `"stderr"`), a log line that holds a whole traceback. Such a
//! line is read as the lines it holds: its escapes undone (`\n`, `\r`,
//! `\t`, the quotes, the backslash, JSON's `\uXXXX`, Python's `\xHH`).
//!
//! A line is read so when it is one quoted string holding a written line
//! end, or holds at least [`MIN_BREAKS`] of them with what starts a log's
//! line after one; and no fewer than the backslashes of Windows paths in
//! it (a backslash before a letter no escape uses). A `\n` that goes on as
//! a folder's name (`C:\Users\name\torch\nn\x.py`) is not counted as a
//! line end.

use crate::decoded::{line_reader, DecodedReader, LineDecoder};
use std::io::Read;

/// Written line ends a line needs to be read as lines.
const MIN_BREAKS: usize = 2;

/// Whether `head` has a line (the last may be cut) that holds written line
/// ends.
pub fn sniff(head: &[u8]) -> bool {
    // Most heads hold no `\n` at all: told at once.
    memchr::memmem::find(head, b"\\n").is_some() && head.split(|&b| b == b'\n').any(holds_breaks)
}

/// Whether `line` holds line ends written as `\\n`: one string in quotes
/// (`'...'`, `"..."`, `b'...'`) with one at least, or else at least
/// [`MIN_BREAKS`] of them, one followed by what starts a log's line (a
/// traceback's header or frame, an exception, a time, `Killed`, ...); in
/// either case no fewer than the backslashes of Windows paths in it. A
/// program's source line (`f.write("a\\n" + "\\n".join(rows))`) or a path
/// (`C:\\Users\\nick\\repos`) has no such start after its `\\n`.
fn holds_breaks(line: &[u8]) -> bool {
    if memchr::memchr(b'\\', line).is_none() {
        return false;
    }
    let mut breaks = 0usize;
    let mut path = 0usize;
    let mut starts = false;
    let mut at = 0;
    while let Some(found) = line.get(at..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let escape = at + found;
        let after = line.get(escape + 2..).unwrap_or_default();
        match line.get(escape + 1).copied() {
            Some(b'n') if !names_a_folder(after) => {
                breaks += 1;
                starts = starts || crate::flattened::starts_a_line(after);
            }
            Some(b'n' | b't' | b'r' | b'u' | b'x' | b'b' | b'f' | b'"' | b'\'' | b'/' | b'\\')
            | None => {}
            Some(_) => path += 1,
        }
        // An escaped backslash is one escape: the byte after it starts no
        // new one.
        at = escape + 2;
    }
    let quoted = unquoted(line).len() + 2 <= line.trim_ascii().len();
    let enough = if quoted {
        breaks >= 1
    } else {
        breaks >= MIN_BREAKS && starts
    };
    enough && breaks >= path
}

/// Whether `s`, after a backslash and a letter, goes on as a folder of a
/// Windows path (`ame\anaconda3` after `C:\Users\n`): a name, then a
/// backslash that starts no escape.
fn names_a_folder(s: &[u8]) -> bool {
    let name = s
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b' '))
        .count();
    s.get(name) == Some(&b'\\')
        && s.get(name + 1)
            .is_some_and(|b| !matches!(b, b'\\' | b'n' | b't' | b'r' | b'"' | b'\''))
}

/// A reader of `inner` with the lines its lines hold.
pub fn reader<R: Read>(inner: R) -> DecodedReader<LineDecoder<R>> {
    line_reader(inner, decode_line)
}

/// Puts `line` in `out`, as the lines it holds where it holds written line
/// ends.
fn decode_line(line: &[u8], out: &mut Vec<u8>) {
    if holds_breaks(line) {
        unescape(unquoted(line), out);
        if line.ends_with(b"\n") && !out.ends_with(b"\n") {
            out.push(b'\n');
        }
    } else {
        out.extend_from_slice(line);
    }
}

/// `line` without the quotes around it when it is one string
/// (`"..."`, `'...'`, Python's `b'...'`), and without its line end.
fn unquoted(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = line.trim_ascii();
    let body = text.strip_prefix(b"b").unwrap_or(text);
    for quote in [b'"', b'\''] {
        let inner = body
            .strip_prefix(&[quote])
            .and_then(|b| b.strip_suffix(&[quote]));
        // One string: every quote inside it is escaped, and so is not the
        // closing one (`"...\\"` ends in an escaped backslash).
        if let Some(inner) = inner.filter(|inner| only_escaped(inner, quote)) {
            return inner;
        }
    }
    line
}

/// Whether every `quote` in `text` is escaped, and `text` does not end in
/// an escape's backslash.
fn only_escaped(text: &[u8], quote: u8) -> bool {
    let mut backslashes = 0usize;
    for &b in text {
        if b == quote && backslashes.is_multiple_of(2) {
            return false;
        }
        backslashes = if b == b'\\' { backslashes + 1 } else { 0 };
    }
    backslashes.is_multiple_of(2)
}

/// Copies `line` into `out` with its escapes undone; an escape it does not
/// know is kept as it is.
fn unescape(line: &[u8], out: &mut Vec<u8>) {
    let mut rest = line;
    while let Some(found) = memchr::memchr(b'\\', rest) {
        out.extend_from_slice(rest.get(..found).unwrap_or_default());
        let after = rest.get(found + 1..).unwrap_or_default();
        let (decoded, used) = escape(after);
        match decoded {
            Some(Unescaped::Byte(b)) => out.push(b),
            Some(Unescaped::Char(c)) => {
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            }
            Some(Unescaped::Nothing) => {}
            None => out.push(b'\\'),
        }
        rest = after.get(used..).unwrap_or_default();
    }
    out.extend_from_slice(rest);
}

/// What an escape stands for.
enum Unescaped {
    Byte(u8),
    Char(char),
    /// A form feed or a backspace: no text.
    Nothing,
}

/// The escape whose letters start `s` (after its backslash), and how many
/// bytes of `s` it takes; `None` for an escape it does not know (no bytes
/// taken).
fn escape(s: &[u8]) -> (Option<Unescaped>, usize) {
    let byte = |b| (Some(Unescaped::Byte(b)), 1);
    match s.first() {
        Some(b'n') => byte(b'\n'),
        Some(b'r') => byte(b'\r'),
        Some(b't') => byte(b'\t'),
        Some(&q @ (b'"' | b'\'' | b'\\' | b'/')) => byte(q),
        Some(b'b' | b'f') => (Some(Unescaped::Nothing), 1),
        Some(b'x') => match s.get(1..3).and_then(hex) {
            // A byte of the text's own encoding (a `bytes` repr).
            Some(v) => (u8::try_from(v).ok().map(Unescaped::Byte), 3),
            None => (None, 0),
        },
        Some(b'u') => match s.get(1..5).and_then(hex) {
            // A surrogate pair is two escapes.
            Some(high @ 0xd800..=0xdbff) => {
                let low = s
                    .get(5..7)
                    .filter(|e| *e == b"\\u")
                    .and_then(|_| s.get(7..11))
                    .and_then(hex)
                    .filter(|low| (0xdc00..=0xdfff).contains(low));
                match low {
                    Some(low) => {
                        let code = 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
                        (char::from_u32(code).map(Unescaped::Char), 11)
                    }
                    None => (Some(Unescaped::Char(char::REPLACEMENT_CHARACTER)), 5),
                }
            }
            Some(code) => (
                Some(Unescaped::Char(
                    char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER),
                )),
                5,
            ),
            None => (None, 0),
        },
        _ => (None, 0),
    }
}

/// The number `digits` writes in hex.
fn hex(digits: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(digits).ok()?;
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(input: &[u8]) -> String {
        crate::decoded::read_all(reader(input))
    }

    #[test]
    fn a_strings_repr_reads_as_its_lines() {
        let input = br#"b'Traceback (most recent call last):\n  File "C:\\Users\\me\\train.py", line 3, in <module>\n    main()\nModuleNotFoundError: No module named \'apex\'\n'"#;
        assert!(sniff(input));
        assert_eq!(
            read(input),
            "Traceback (most recent call last):\n  File \"C:\\Users\\me\\train.py\", line 3, in <module>\n    main()\nModuleNotFoundError: No module named 'apex'\n"
        );
    }

    #[test]
    fn a_json_value_reads_as_its_lines_between_plain_ones() {
        let input = concat!(
            "INFO: 10.0.0.1 - \"POST /v1/completions\" 500\n",
            r#"{"detail": "Traceback (most recent call last):\n  File \"x.py\", line 1\nRuntimeError: CUDA error: out of memory \u2013 \ud83d\ude31\nCompile with `TORCH_USE_CUDA_DSA`\n"}"#,
            "\nINFO: done\n",
        );
        assert!(sniff(input.as_bytes()));
        assert_eq!(
            read(input.as_bytes()),
            "INFO: 10.0.0.1 - \"POST /v1/completions\" 500\n{\"detail\": \"Traceback (most recent call last):\n  File \"x.py\", line 1\nRuntimeError: CUDA error: out of memory – 😱\nCompile with `TORCH_USE_CUDA_DSA`\n\"}\nINFO: done\n"
        );
    }

    #[test]
    fn a_quoted_string_ending_in_a_written_line_end_reads_as_a_line() {
        for (line, read_as) in [
            (
                "'29/30 [00:35<00:01,  1.39s/it]Killed\\n'\n",
                "29/30 [00:35<00:01,  1.39s/it]Killed\n",
            ),
            (
                "'RuntimeError: Address already in use\\n'\n",
                "RuntimeError: Address already in use\n",
            ),
        ] {
            assert!(sniff(line.as_bytes()), "{line}");
            assert_eq!(read(line.as_bytes()), read_as);
        }
    }

    #[test]
    fn windows_paths_and_a_single_escape_stay_as_they_are() {
        for line in [
            // A program's source lines in a traceback.
            r#"    f"Loss became infinite or NaN at iteration={storage.iter}!\n""#,
            r#"    log.write("step\tloss\n" + "\n".join(rows))"#,
            // A path whose folders start with the letters of escapes.
            r#"  File "C:\Users\nick\repos\nanoGPT\train.py", line 3, in <module>"#,
            r#"library=C:\WINDOWS\system32\nvcuda.dll error="symbol lookup failed""#,
            // Two strings on one line.
            r#""a\nb" and "d""#,
            r#"  File "C:\Users\name\anaconda3\lib\site-packages\torch\nn\modules\module.py", line 1102, in _call_impl"#,
            r#"print("a\nb") gave two lines"#,
            r"C:\\new\\net\\nvidia\\nccl.dll",
        ] {
            assert!(!sniff(line.as_bytes()), "{line}");
            assert_eq!(read(line.as_bytes()), line);
        }
    }

    #[test]
    fn bytes_reprs_and_broken_escapes_decode_without_panic() {
        let input = br"b'caf\xc3\xa9\nA\nB\nC \x\u12\ud800 \q end\\'";
        assert_eq!(read(input), "café\nA\nB\nC \\x\\u12\u{fffd} \\q end\\");
        for cut in 0..input.len() {
            let _ = read(input.get(..cut).unwrap_or_default());
        }
    }
}

use memchr::memmem::Finder;
use nom::branch::alt;
use nom::bytes::complete::{tag, take_till1, take_while_m_n};
use nom::character::complete::char;
use nom::multi::many_m_n;
use nom::sequence::{delimited, preceded, terminated};
use nom::{IResult, Parser};
use std::sync::LazyLock;

/// Copies `raw` into `out` without what terminals and web pages add to a
/// line: a trailing CR, ANSI escape sequences (CSI `ESC [ ... final`, OSC
/// `ESC ] ... BEL|ST` and the other control strings, such as the line's time
/// Buildkite's agent hides in `ESC _bk;t=... BEL`, and two-byte `ESC x`), Markdown quote markers at its
/// start (`> `, `> > `), Markdown emphasis or code marks around the
/// whole line (`**RuntimeError: ...**`, `` `Killed` ``), the HTML character references of the five
/// characters pages escape (`&lt;`, `&quot;`, `&#39;`, ...), the
/// typographic quotes, ellipses, dashes and no-break spaces a page or a
/// forum puts in place of ASCII (`‘out of memory’`, `–local_rank`), and the links
/// an issue tracker makes of file names (`[net_ib.cc:101](http://net_ib.cc:101/)`
/// becomes `net_ib.cc:101`), and colour codes whose escape byte a page
/// dropped (`[36m(pid=1234)[0m`, see [`strip_orphan_colours`]). Returns
/// `out` for chaining.
pub fn clean_line<'o>(raw: &[u8], out: &'o mut Vec<u8>) -> &'o [u8] {
    out.clear();
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    if memchr::memchr(0x1b, raw).is_none() {
        out.extend_from_slice(raw);
    } else {
        strip_escapes(raw, out);
    }
    if memchr::memchr3(b'&', 0xe2, 0xc2, out).is_some() {
        plain_web_text(out);
    }
    static RESET: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"[0m"));
    // After the references: a quoted reply copied from a page is `&gt; `.
    strip_quote_markers(out);
    // After the quote markers: a quoted line may start with a colour code.
    let indent = out.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let leads = out
        .get(indent..)
        .is_some_and(|line| line.first() == Some(&b'[') && orphan_colour(line).is_ok());
    if leads || RESET.find(out).is_some() {
        strip_orphan_colours(out);
    }
    strip_emphasis(out);
    static LINK: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"](http"));
    if LINK.find(out).is_some() {
        unlink(out);
    }
    out
}

/// Whether `bytes` hold what [`clean_line`] turns into the characters a
/// rule's literal may hold (an HTML character reference, a typographic
/// quote): a text copied from a web page, whose lines must be cleaned
/// before anything is searched in them.
pub fn has_web_text(bytes: &[u8]) -> bool {
    memchr::memchr3_iter(b'&', 0xe2, 0xc2, bytes)
        .any(|at| bytes.get(at..).and_then(web_text_at).is_some())
}

/// What a web page or a forum puts in place of what a program printed,
/// and the ASCII it stands for (never longer): the HTML character
/// references of quotes, brackets, `&` and the no-break space, and
/// typographic quotes, the ellipsis, dashes made of `--` and the no-break
/// space itself.
const WEB_TEXT: [(&[u8], &[u8]); 19] = [
    (b"&lt;", b"<"),
    (b"&gt;", b">"),
    (b"&amp;", b"&"),
    (b"&quot;", b"\""),
    (b"&#34;", b"\""),
    (b"&#39;", b"'"),
    (b"&#x27;", b"'"),
    (b"&apos;", b"'"),
    (b"&nbsp;", b" "),
    ("\u{2018}".as_bytes(), b"'"),
    ("\u{2019}".as_bytes(), b"'"),
    ("\u{201a}".as_bytes(), b"'"),
    ("\u{201c}".as_bytes(), b"\""),
    ("\u{201d}".as_bytes(), b"\""),
    ("\u{201e}".as_bytes(), b"\""),
    ("\u{2026}".as_bytes(), b"..."),
    ("\u{2013}".as_bytes(), b"--"),
    ("\u{2014}".as_bytes(), b"--"),
    ("\u{a0}".as_bytes(), b" "),
];

/// The [`WEB_TEXT`] at the start of `bytes`: its length and its ASCII.
fn web_text_at(bytes: &[u8]) -> Option<(usize, &'static [u8])> {
    WEB_TEXT
        .iter()
        .find(|(web, _)| bytes.starts_with(web))
        .map(|(web, plain)| (web.len(), *plain))
}

/// Replaces [`WEB_TEXT`] in place with its ASCII, in one pass (so
/// `&amp;lt;` is `&lt;`).
fn plain_web_text(out: &mut Vec<u8>) {
    let (mut read, mut write) = (0, 0);
    while let Some((&first, _)) = out.get(read..).and_then(<[u8]>::split_first) {
        let (len, plain) = match out.get(read..).and_then(web_text_at) {
            Some(found) => found,
            None => (1, std::slice::from_ref(&first)),
        };
        for &b in plain {
            if let Some(slot) = out.get_mut(write) {
                *slot = b;
            }
            write += 1;
        }
        read += len;
    }
    out.truncate(write);
}

/// Removes Markdown quote markers from the start of the line (see
/// [`quote_markers`]); the indentation in front of them stays.
fn strip_quote_markers(out: &mut Vec<u8>) {
    let (indent, at) = quote_markers(out);
    if at > indent {
        out.drain(indent..at);
    }
}

/// Removes the Markdown marks a paste in an issue puts around a whole line
/// to stress it, bold (`**`) or inline code (one backtick), so that
/// the line reads as the program printed it; the indentation in front
/// stays. A line the marks do not close, or a fence (three backticks),
/// is left as it is.
fn strip_emphasis(out: &mut Vec<u8>) {
    let indent = out.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    let end = out.len() - out.iter().rev().take_while(|&&b| b == b' ').count();
    let Some(line) = out.get(indent..end) else {
        return;
    };
    let mark = [&b"**"[..], b"`"]
        .into_iter()
        .find(|m| line.starts_with(m) && line.ends_with(m));
    let Some(mark) = mark else {
        return;
    };
    let inner = line
        .get(mark.len()..line.len() - mark.len())
        .unwrap_or_default();
    // The marks hug the text (`** x **` is not emphasis), and a code span
    // holds no backtick of its own (` ``` ` is a fence).
    let hugs = inner.first().is_some_and(|b| !b.is_ascii_whitespace())
        && inner.last().is_some_and(|b| !b.is_ascii_whitespace());
    // A run of the mark's character is a banner (`*** Error in ... ***`),
    // not emphasis.
    let banner = mark
        .first()
        .is_some_and(|m| inner.first() == Some(m) || inner.last() == Some(m));
    if !hugs || banner || (mark == b"`" && inner.contains(&b'`')) {
        return;
    }
    out.truncate(end - mark.len());
    out.drain(indent..indent + mark.len());
}

/// Where the Markdown quote markers at the start of `line` begin and end:
/// after up to eight spaces or tabs of indentation, `>` followed by a space
/// or the line's end, any number of times (begin and end are equal when
/// there is none). A prompt such as `>>> ` is not a marker.
pub fn quote_markers(line: &[u8]) -> (usize, usize) {
    // An indented block of quoted lines keeps its indentation.
    let indent = line
        .iter()
        .take(8)
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    let mut at = indent;
    while line.get(at) == Some(&b'>') {
        match line.get(at + 1) {
            Some(b' ') => at += 2,
            None => at += 1,
            Some(_) => break,
        }
    }
    (indent, at)
}

/// `[text](http://text/)`: an issue tracker's automatic link around a
/// file or host name; `text`, and the rest of the input after the link.
fn autolink(s: &[u8]) -> IResult<&[u8], &[u8]> {
    let text = delimited(
        char('['),
        take_till1(|c| matches!(c, b']' | b'[' | b' ')),
        tag(&b"]("[..]),
    );
    let url = preceded(
        alt((tag(&b"http://"[..]), tag(&b"https://"[..]))),
        terminated(take_till1(|c| matches!(c, b')' | b' ')), char(')')),
    );
    let (rest, (text, url)) = (text, url).parse(s)?;
    let url = url.strip_suffix(b"/").unwrap_or(url);
    if url.eq_ignore_ascii_case(text) {
        Ok((rest, text))
    } else {
        Err(nom::Err::Error(nom::error::Error::new(
            s,
            nom::error::ErrorKind::Verify,
        )))
    }
}

/// Replaces every [`autolink`] in the line with its text.
fn unlink(out: &mut Vec<u8>) {
    let mut result = Vec::with_capacity(out.len());
    let mut rest: &[u8] = out;
    while let Some((&first, after)) = rest.split_first() {
        if first == b'[' {
            if let Ok((after_link, text)) = autolink(rest) {
                result.extend_from_slice(text);
                rest = after_link;
                continue;
            }
        }
        result.push(first);
        rest = after;
    }
    *out = result;
}

/// A colour code (SGR) without its escape byte: `[`, up to eight numbers of
/// up to three digits separated by `;`, and `m` (`[36m`, `[1;31m`, `[0m`,
/// a true colour `[1;38;2;255;0;0m`).
fn orphan_colour(s: &[u8]) -> IResult<&[u8], ()> {
    let number = || take_while_m_n(1, 3, |c: u8| c.is_ascii_digit());
    let (rest, _) = (
        char('['),
        number(),
        many_m_n(0, 7, preceded(char(';'), number())),
        char('m'),
    )
        .parse(s)?;
    Ok((rest, ()))
}

/// What a page or a terminal copy leaves in place of the escape byte
/// before an orphan colour code: U+FFFD (a byte that was not UTF-8) or
/// U+241B (the picture of ESC).
const ESCAPE_STAND_INS: [&[u8]; 2] = ["\u{fffd}".as_bytes(), "\u{241b}".as_bytes()];

/// Removes colour codes whose escape byte was lost on the way to a web page
/// (GitHub drops it from a pasted Ray log: `[36m(main_task pid=1234)[0m
/// Traceback ...`), with the stand-in a copy left for the byte, if any.
/// Called only for a line that starts with an orphan colour code or holds
/// an orphan reset (`[0m`): ordinary text such as `eta [5m]` in a line
/// without one is left alone.
fn strip_orphan_colours(out: &mut Vec<u8>) {
    let mut result = Vec::with_capacity(out.len());
    let mut rest: &[u8] = out;
    while let Some(at) = memchr::memchr(b'[', rest) {
        let (before, from) = rest.split_at(at);
        match orphan_colour(from) {
            Ok((after, ())) => {
                let before = ESCAPE_STAND_INS
                    .iter()
                    .find_map(|stand_in| before.strip_suffix(*stand_in))
                    .unwrap_or(before);
                result.extend_from_slice(before);
                rest = after;
            }
            Err(_) => {
                result.extend_from_slice(before);
                result.push(b'[');
                rest = from.get(1..).unwrap_or_default();
            }
        }
    }
    result.extend_from_slice(rest);
    *out = result;
}

/// Copies `raw` into `out` without its ANSI escape sequences.
fn strip_escapes(raw: &[u8], out: &mut Vec<u8>) {
    let mut bytes = raw.iter().copied();
    while let Some(b) = bytes.next() {
        if b != 0x1b {
            out.push(b);
            continue;
        }
        match bytes.next() {
            // CSI: parameters and intermediates up to a final byte.
            Some(b'[') => {
                for c in bytes.by_ref() {
                    if (0x40..=0x7e).contains(&c) {
                        break;
                    }
                }
            }
            // OSC, and the other control strings (DCS, SOS, PM, APC:
            // Buildkite's agent hides each line's time in one): up to BEL
            // or ST (`ESC \`).
            Some(b']' | b'P' | b'X' | b'^' | b'_') => {
                // Without its end on the line, it was a two-byte escape.
                let mut escape = false;
                let end = bytes.clone().position(|c| {
                    let end = c == 0x07 || (escape && c == b'\\');
                    escape = c == 0x1b;
                    end
                });
                if let Some(end) = end {
                    bytes.nth(end);
                }
            }
            // Two-byte `ESC x`, or an escape at the end of the line.
            Some(_) | None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        clean_line(s, &mut out).to_vec()
    }

    #[test]
    fn strips_crlf_and_colours() {
        assert_eq!(clean(b"plain\r"), b"plain");
        assert_eq!(
            clean(b"\x1b[1;31mERROR\x1b[0m: CUDA error"),
            b"ERROR: CUDA error"
        );
        assert_eq!(clean(b"\x1b]0;title\x07text"), b"text");
        assert_eq!(clean(b"\x1b_bk;t=1709287872123\x07Killed"), b"Killed");
        assert_eq!(clean(b"\x1bP1$r0m\x1b\\text"), b"text");
        assert_eq!(clean(b"\x1b^Killed"), b"Killed");
    }

    #[test]
    fn strips_emphasis_around_a_whole_line() {
        assert_eq!(
            clean(b"**RuntimeError: Invalid device, must be cuda device**"),
            b"RuntimeError: Invalid device, must be cuda device"
        );
        assert_eq!(
            clean(b"  `pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded`  "),
            b"  pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded"
        );
        assert_eq!(clean(b"> **Killed**"), b"Killed");
        // Not marks around the whole line: left as printed.
        for kept in [
            &b"**kwargs are passed to the model"[..],
            b"```",
            b"`a` and `b`",
            b"** x **",
            b"****",
            b"******** Running training ********",
            b"*** Error in `build/Train': double free or corruption (!prev): 0x4da56e70 ***",
            b"__init__",
            b"`",
        ] {
            assert_eq!(clean(kept), kept, "{}", String::from_utf8_lossy(kept));
        }
    }

    #[test]
    fn strips_what_web_pages_add() {
        assert_eq!(
            clean(b"  File &quot;/x/train.py&quot;, line 5, in &lt;module&gt;"),
            b"  File \"/x/train.py\", line 5, in <module>"
        );
        assert_eq!(
            clean(b"NCCL WARN Cuda failure &#39;out of memory&#39; &amp;&amp; &amp;lt;"),
            b"NCCL WARN Cuda failure 'out of memory' && &lt;"
        );
        assert_eq!(clean(b"> > RuntimeError: x"), b"RuntimeError: x");
        assert_eq!(clean(b">"), b"");
        assert_eq!(clean(b">>> import torch"), b">>> import torch");
        assert_eq!(clean(b"a > b"), b"a > b");
        assert_eq!(clean(b"    > node1:1:2 [0] x"), b"    node1:1:2 [0] x");
        assert_eq!(clean(b"&gt; RuntimeError: x"), b"RuntimeError: x");
        assert_eq!(clean(b"&gt;&gt;&gt; import torch"), b">>> import torch");
        assert_eq!(
            clean(b"n1:1:2 [0] transport/[net_ib.cc:101](http://net_ib.cc:101/) NCCL WARN"),
            b"n1:1:2 [0] transport/net_ib.cc:101 NCCL WARN"
        );
        assert_eq!(
            clean(b"File \"[train.py](https://train.py)\", line 3"),
            b"File \"train.py\", line 3"
        );
        // A real link keeps its address.
        assert_eq!(
            clean(b"see [docs](https://pytorch.org/docs)"),
            b"see [docs](https://pytorch.org/docs)"
        );
        assert_eq!(clean(b"[a](http://a"), b"[a](http://a");
        assert!(has_web_text(b"x &gt; y"));
        assert!(!has_web_text(b"https://hf.co/x?a=1&b=2"));
        assert_eq!(
            clean("Cuda failure \u{2018}out of memory\u{2019} \u{2013}local_rank=1 \u{201c}x\u{201d}\u{2026} it\u{2019}s\u{a0}ok".as_bytes()),
            b"Cuda failure 'out of memory' --local_rank=1 \"x\"... it's ok"
        );
        // Other text stays: a progress bar, CJK, an accent.
        let other = "100%|\u{2588}\u{2588}| \u{5df2}\u{653e}\u{5f03} caf\u{e9}";
        assert_eq!(clean(other.as_bytes()), other.as_bytes());
        assert!(has_web_text("it\u{2019}s".as_bytes()));
        assert!(!has_web_text(other.as_bytes()));
    }

    #[test]
    fn strips_colour_codes_that_lost_their_escape_byte() {
        assert_eq!(
            clean(b"[36m(main_task pid=1234)[0m ValueError: bad"),
            b"(main_task pid=1234) ValueError: bad"
        );
        assert_eq!(
            clean("\u{fffd}[1;31mERROR\u{fffd}[0m: CUDA error".as_bytes()),
            b"ERROR: CUDA error"
        );
        assert_eq!(
            clean("\u{241b}[32mINFO\u{241b}[0m done".as_bytes()),
            b"INFO done"
        );
        // A line that starts with one (Ray's prefix, its reset lost too).
        assert_eq!(
            clean(b"[36m(main_task pid=3523385) ValueError: bad"),
            b"(main_task pid=3523385) ValueError: bad"
        );
        // Quoted, and in true colour.
        assert_eq!(
            clean(b"> [36m(main_task pid=7) ValueError: bad"),
            b"(main_task pid=7) ValueError: bad"
        );
        assert_eq!(
            clean(b"[1;38;2;255;0;0mRuntimeError: x[0m"),
            b"RuntimeError: x"
        );
        // Otherwise, bracketed text is the program's own.
        assert_eq!(clean(b"eta [5m] step [36m"), b"eta [5m] step [36m");
        // Not a colour code: left as it is.
        assert_eq!(clean(b"x[0m [a] [1234m] [m"), b"x [a] [1234m] [m");
    }

    #[test]
    fn truncated_escape_does_not_panic() {
        assert_eq!(clean(b"abc\x1b"), b"abc");
        assert_eq!(clean(b"abc\x1b[12"), b"abc");
    }
}

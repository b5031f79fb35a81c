/// Copies `raw` into `out` without a trailing CR and without ANSI escape
/// sequences (CSI `ESC [ ... final`, OSC `ESC ] ... BEL|ST`, and two-byte
/// `ESC x`). Returns `out` for chaining.
pub fn clean_line<'o>(raw: &[u8], out: &'o mut Vec<u8>) -> &'o [u8] {
    out.clear();
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    if memchr::memchr(0x1b, raw).is_none() {
        out.extend_from_slice(raw);
        return out;
    }
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
            // OSC: up to BEL or ST (`ESC \`).
            Some(b']') => {
                let mut escape = false;
                for c in bytes.by_ref() {
                    if c == 0x07 || (escape && c == b'\\') {
                        break;
                    }
                    escape = c == 0x1b;
                }
            }
            // Two-byte `ESC x`, or an escape at the end of the line.
            Some(_) | None => {}
        }
    }
    out
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
    }

    #[test]
    fn truncated_escape_does_not_panic() {
        assert_eq!(clean(b"abc\x1b"), b"abc");
        assert_eq!(clean(b"abc\x1b[12"), b"abc");
    }
}

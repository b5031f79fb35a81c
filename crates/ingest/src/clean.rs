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
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != 0x1b {
            out.push(b);
            i += 1;
            continue;
        }
        match raw.get(i + 1) {
            Some(b'[') => {
                i += 2;
                while i < raw.len() && !(0x40..=0x7e).contains(&raw[i]) {
                    i += 1;
                }
                i += 1;
            }
            Some(b']') => {
                i += 2;
                while i < raw.len() {
                    if raw[i] == 0x07 {
                        i += 1;
                        break;
                    }
                    if raw[i] == 0x1b && raw.get(i + 1) == Some(&b'\\') {
                        i += 2;
                        break;
                    }
                    i += 1;
                }
            }
            Some(_) => i += 2,
            None => i += 1,
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

//! Text written as UTF-16, read as UTF-8.
//!
//! Windows PowerShell 5's `>` and `Out-File` write UTF-16 LE with a byte
//! order mark, so `python train.py > log.txt` there gives a log in which
//! every other byte is zero. Such a file is told by its mark and decoded
//! as it is read; an unpaired surrogate or a lone last byte becomes U+FFFD.

use crate::decoded::{Decode, DecodedReader};
use std::io::{self, Read};

/// The byte order of UTF-16 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Utf16 {
    Le,
    Be,
}

impl Utf16 {
    /// The byte order that `head`'s byte order mark names, when the text
    /// after it reads as UTF-16 text in any language: of its first 256
    /// units, no more than one in eight is NUL, a control character other
    /// than a tab or a line end, or half of a broken surrogate pair, and a
    /// line end or a space is among them (of fewer than 16 units, no more
    /// than half are such, and at least half are below U+0100). (A log that starts with the same
    /// two bytes of garbage reads as CJK without a space; UTF-32's mark,
    /// `FF FE 00 00`, is followed by NUL units.)
    pub fn sniff(head: &[u8]) -> Option<Utf16> {
        let order = match head {
            [0xff, 0xfe, ..] => Utf16::Le,
            [0xfe, 0xff, ..] => Utf16::Be,
            _ => return None,
        };
        let units: Vec<u16> = head
            .get(2..)?
            .chunks_exact(2)
            .take(256)
            .filter_map(|p| p.try_into().ok())
            .map(|p| order.unit(p))
            .collect();
        let broken = char::decode_utf16(units.iter().copied())
            .filter(|c| match c {
                Ok(c) => c.is_control() && !matches!(c, '\t' | '\r' | '\n'),
                Err(_) => true,
            })
            .count();
        let spaced = units.iter().any(|&u| matches!(u, 0x0a | 0x20 | 0x3000));
        let reads = match units.len() {
            0 => false,
            // Too short to ask for a space: a word or two, of Latin
            // letters mostly.
            n if n < 16 => broken * 2 <= n && units.iter().filter(|&&u| u < 0x100).count() * 2 >= n,
            n => broken * 8 <= n && spaced,
        };
        reads.then_some(order)
    }

    /// Name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Utf16::Le => "UTF-16LE",
            Utf16::Be => "UTF-16BE",
        }
    }

    fn unit(self, pair: [u8; 2]) -> u16 {
        match self {
            Utf16::Le => u16::from_le_bytes(pair),
            Utf16::Be => u16::from_be_bytes(pair),
        }
    }
}

/// Bytes of UTF-16 read at a time.
const READ_LEN: usize = 64 * 1024;

/// A decoder of UTF-16 text (its byte order mark first) into UTF-8,
/// without the mark.
pub struct Utf16Decoder<R> {
    inner: R,
    order: Utf16,
    /// Bytes read, not decoded yet (an odd byte or a high surrogate's
    /// half left from the last read).
    raw: Vec<u8>,
    /// Whether the mark was passed over.
    marked: bool,
    done: bool,
}

impl<R: Read> Utf16Decoder<R> {
    /// A reader of `inner`'s text as UTF-8.
    pub fn reader(inner: R, order: Utf16) -> DecodedReader<Utf16Decoder<R>> {
        DecodedReader::new(Utf16Decoder {
            inner,
            order,
            raw: Vec::new(),
            marked: false,
            done: false,
        })
    }
}

impl<R: Read> Decode for Utf16Decoder<R> {
    fn fill(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        if self.done {
            return Ok(false);
        }
        let kept = self.raw.len();
        self.raw.resize(kept + READ_LEN, 0);
        let n = loop {
            match self
                .inner
                .read(self.raw.get_mut(kept..).unwrap_or_default())
            {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.raw.truncate(kept);
                    return Err(e);
                }
            }
        };
        self.raw.truncate(kept + n);
        let end = n == 0;
        // Whole units only, and not a high surrogate whose pair may come
        // with the next read; at the end, whatever is left.
        let mut whole = self.raw.len() & !1;
        if !end && whole >= 2 {
            let last = self
                .raw
                .get(whole - 2..whole)
                .and_then(|p| p.try_into().ok());
            if last.is_some_and(|p| (0xd800..0xdc00).contains(&self.order.unit(p))) {
                whole -= 2;
            }
        }
        let order = self.order;
        let units = self
            .raw
            .get(..whole)
            .unwrap_or_default()
            .chunks_exact(2)
            .filter_map(|p| p.try_into().ok())
            .map(|p| order.unit(p));
        let mut buf = [0u8; 4];
        for c in char::decode_utf16(units) {
            let c = c.unwrap_or(char::REPLACEMENT_CHARACTER);
            if !self.marked {
                self.marked = true;
                if c == '\u{feff}' {
                    continue;
                }
            }
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
        self.raw.drain(..whole);
        if end {
            if !self.raw.is_empty() {
                // A lone last byte.
                out.extend_from_slice(char::REPLACEMENT_CHARACTER.encode_utf8(&mut buf).as_bytes());
                self.raw.clear();
            }
            self.done = true;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out `step` bytes at a time.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn encoded(text: &str, order: Utf16) -> Vec<u8> {
        let mut bytes = Vec::new();
        for unit in std::iter::once(0xfeff).chain(text.encode_utf16()) {
            bytes.extend_from_slice(&match order {
                Utf16::Le => unit.to_le_bytes(),
                Utf16::Be => unit.to_be_bytes(),
            });
        }
        bytes
    }

    fn decoded(bytes: &[u8], step: usize) -> String {
        let order = Utf16::sniff(bytes).unwrap_or_else(|| panic!("a mark"));
        let mut out = String::new();
        Utf16Decoder::reader(Trickle(bytes, step), order)
            .read_to_string(&mut out)
            .unwrap_or_else(|e| panic!("{e}"));
        out
    }

    #[test]
    fn both_byte_orders_read_as_the_text_whatever_the_reads() {
        let text = "Traceback (most recent call last):\r\n  File \"train.py\", line 3\r\ntorch.OutOfMemoryError: CUDA out of memory 😱 ünïcode\r\n";
        for order in [Utf16::Le, Utf16::Be] {
            let bytes = encoded(text, order);
            for step in [1, 2, 3, 5, 4096, 1 << 20] {
                assert_eq!(decoded(&bytes, step), text, "{order:?} step {step}");
            }
        }
    }

    #[test]
    fn broken_units_become_replacement_characters() {
        // A lone high surrogate, then a lone last byte.
        let mut bytes = vec![0xff, 0xfe, b'a', 0, 0x3d, 0xd8, b'b', 0, b'c'];
        assert_eq!(decoded(&bytes, 1), "a\u{fffd}b\u{fffd}");
        bytes.truncate(4);
        assert_eq!(decoded(&bytes, 7), "a");
    }

    #[test]
    fn only_a_byte_order_mark_names_utf16() {
        assert_eq!(Utf16::sniff(b"\xff\xfeT\x00"), Some(Utf16::Le));
        assert_eq!(Utf16::sniff(b"\xfe\xff\x00T"), Some(Utf16::Be));
        assert_eq!(Utf16::sniff(b"T\x00r\x00"), None);
        assert_eq!(
            Utf16::sniff(b"\xff\xfe garbage \xc3\x28\r\n[rank3]: "),
            None
        );
        assert_eq!(Utf16::sniff(b"\xff\xfe"), None);
        assert_eq!(
            Utf16::sniff(b"\xff\xfe\x00\x00T\x00\x00\x00 \x00\x00\x00"),
            None
        );
        let chinese: Vec<u8> = std::iter::once(0xfeff_u16)
            .chain("训练步骤 1 损失 2.3 显存不足\r\n".repeat(20).encode_utf16())
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(Utf16::sniff(&chinese), Some(Utf16::Le));
        assert_eq!(Utf16::sniff(b"\xef\xbb\xbfTraceback"), None);
    }
}

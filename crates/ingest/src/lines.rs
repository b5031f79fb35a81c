use std::io::{self, BufRead};

/// Longest line kept for matching; the rest of a longer line is read and
/// discarded, and the line is marked truncated.
pub const MAX_LINE: usize = 1 << 20;

/// One line as read, without its newline.
#[derive(Debug)]
pub struct RawLine<'a> {
    /// 1-based line number.
    pub number: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// The bytes (at most [`MAX_LINE`]); may hold a trailing CR.
    pub bytes: &'a [u8],
    /// Whether the line was longer than [`MAX_LINE`].
    pub truncated: bool,
}

/// Streams lines out of a reader with bounded memory.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    number: u64,
    offset: u64,
    max: usize,
}

impl<R: BufRead> LineReader<R> {
    /// A reader keeping at most [`MAX_LINE`] bytes of a line.
    pub fn new(inner: R) -> Self {
        Self::with_max_line(inner, MAX_LINE)
    }

    /// A reader keeping at most `max` bytes of a line.
    pub fn with_max_line(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::new(),
            number: 0,
            offset: 0,
            max: max.max(1),
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Lines returned so far.
    pub fn lines(&self) -> u64 {
        self.number
    }

    /// The next line, or `None` at the end. An I/O error (a truncated
    /// compressed stream, say) is returned as is; [`LineReader::offset`]
    /// then tells where it happened.
    pub fn next_line(&mut self) -> io::Result<Option<RawLine<'_>>> {
        self.buf.clear();
        let start = self.offset;
        let mut seen = 0usize;
        let mut truncated = false;
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                if seen == 0 {
                    return Ok(None);
                }
                break;
            }
            let (chunk, used, done) = match memchr::memchr(b'\n', avail) {
                Some(i) => (&avail[..i], i + 1, true),
                None => (avail, avail.len(), false),
            };
            let room = self.max - self.buf.len();
            if chunk.len() > room {
                truncated = true;
            }
            self.buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
            seen += used;
            self.inner.consume(used);
            self.offset += used as u64;
            if done {
                break;
            }
        }
        self.number += 1;
        Ok(Some(RawLine {
            number: self.number,
            offset: start,
            bytes: &self.buf,
            truncated,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(data: &[u8], max: usize) -> Vec<(u64, u64, Vec<u8>, bool)> {
        let mut r = LineReader::with_max_line(io::BufReader::with_capacity(4, data), max);
        let mut out = Vec::new();
        while let Ok(Some(l)) = r.next_line() {
            out.push((l.number, l.offset, l.bytes.to_vec(), l.truncated));
        }
        out
    }

    #[test]
    fn lines_numbers_and_offsets() {
        let got = collect(b"ab\ncdef\n\nlast", 100);
        assert_eq!(
            got,
            vec![
                (1, 0, b"ab".to_vec(), false),
                (2, 3, b"cdef".to_vec(), false),
                (3, 8, b"".to_vec(), false),
                (4, 9, b"last".to_vec(), false),
            ]
        );
    }

    #[test]
    fn long_lines_are_truncated_not_buffered() {
        let mut data = vec![b'x'; 1000];
        data.extend_from_slice(b"\nnext\n");
        let got = collect(&data, 10);
        assert_eq!(got[0].2.len(), 10);
        assert!(got[0].3);
        assert_eq!(got[1], (2, 1001, b"next".to_vec(), false));
    }
}

use std::io::{self, Read};

/// Longest line kept for matching; the rest of a longer line is read and
/// discarded, and the line is counted as truncated.
pub const MAX_LINE: usize = 1 << 20;

/// Size of the read buffer: blocks hold up to this many bytes of whole
/// lines.
pub const BLOCK_LEN: usize = 2 << 20;

/// Bytes a block buffer starts with.
const INITIAL_LEN: usize = 32 << 10;

/// A piece of an input.
#[derive(Debug)]
pub enum Block<'a> {
    /// Whole lines, each ending in `\n` except possibly the last line of
    /// the input.
    Lines {
        /// The bytes.
        bytes: &'a [u8],
        /// Offset of the first byte in the input.
        offset: u64,
    },
    /// The first [`MAX_LINE`] bytes of a line longer than the read buffer;
    /// the rest of that line is skipped.
    LongLine {
        /// The kept head of the line.
        head: &'a [u8],
        /// Offset of the line in the input.
        offset: u64,
    },
}

/// Reads an input in large blocks of whole lines with bounded memory.
///
/// Scanning a block at a time lets the caller look for interesting bytes
/// across many lines at once instead of line by line.
#[derive(Debug)]
pub struct BlockReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// The most bytes `buf` grows to.
    capacity: usize,
    /// Bytes of `buf` already handed out.
    start: usize,
    /// Bytes of `buf` holding data.
    filled: usize,
    /// Input offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// Discarding the rest of a long line.
    skipping: bool,
    /// A read error, reported once the bytes read before it are used.
    error: Option<io::Error>,
    /// Hand out lines as soon as a read brings them, rather than filling
    /// the buffer first (for following a growing input).
    live: bool,
}

impl<R: Read> BlockReader<R> {
    /// A reader with a [`BLOCK_LEN`] buffer.
    pub fn new(inner: R) -> Self {
        Self::with_capacity(inner, BLOCK_LEN)
    }

    /// A reader whose buffer holds `capacity` bytes (at least 2). The
    /// buffer starts small and grows as the input fills it: a directory
    /// of many small files costs no large buffer per file.
    pub fn with_capacity(inner: R, capacity: usize) -> Self {
        let capacity = capacity.max(2);
        BlockReader {
            inner,
            buf: vec![0; capacity.min(INITIAL_LEN)],
            capacity,
            start: 0,
            filled: 0,
            base: 0,
            eof: false,
            skipping: false,
            error: None,
            live: false,
        }
    }

    /// A reader that hands out whole lines as soon as they arrive: for a
    /// pipe or a file being written, where waiting for a full buffer would
    /// hold findings back.
    pub fn live(inner: R) -> Self {
        BlockReader {
            live: true,
            ..Self::new(inner)
        }
    }

    /// Bytes of input consumed so far.
    pub fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    /// The next block, or `None` at the end of the input. After an error
    /// [`BlockReader::offset`] tells how far the input was read.
    pub fn next_block(&mut self) -> io::Result<Option<Block<'_>>> {
        loop {
            self.compact();
            self.fill();
            if self.skipping {
                match memchr::memchr(b'\n', self.buf.get(..self.filled).unwrap_or_default()) {
                    Some(i) => {
                        self.start = i + 1;
                        self.skipping = false;
                        continue;
                    }
                    None if self.filled == 0 => return self.end(),
                    None => {
                        self.start = self.filled;
                        continue;
                    }
                }
            }
            if self.filled == 0 {
                return self.end();
            }
            let filled = self.buf.get(..self.filled).unwrap_or_default();
            let offset = self.base;
            return Ok(Some(match memchr::memrchr(b'\n', filled) {
                Some(i) => {
                    self.start = i + 1;
                    Block::Lines {
                        bytes: filled.get(..=i).unwrap_or(filled),
                        offset,
                    }
                }
                None if self.eof => {
                    self.start = self.filled;
                    Block::Lines {
                        bytes: filled,
                        offset,
                    }
                }
                None => {
                    self.start = self.filled;
                    self.skipping = true;
                    Block::LongLine {
                        head: filled.get(..MAX_LINE).unwrap_or(filled),
                        offset,
                    }
                }
            }));
        }
    }

    /// The end of the input: `None`, or the error that ended it.
    fn end(&mut self) -> io::Result<Option<Block<'_>>> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Moves unconsumed bytes to the front of the buffer.
    fn compact(&mut self) {
        if self.start == 0 {
            return;
        }
        self.buf.copy_within(self.start..self.filled, 0);
        self.base += self.start as u64;
        self.filled -= self.start;
        self.start = 0;
    }

    /// Reads until the buffer is full or the input ends.
    fn fill(&mut self) {
        while !self.eof {
            if self.filled == self.buf.len() && self.buf.len() < self.capacity {
                let grown = self.buf.len().saturating_mul(4).min(self.capacity);
                self.buf.resize(grown, 0);
            }
            let Some(free) = self.buf.get_mut(self.filled..).filter(|f| !f.is_empty()) else {
                return;
            };
            match self.inner.read(free) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    let new = free.get(..n).unwrap_or_default();
                    let line = memchr::memchr(b'\n', new).is_some();
                    self.filled += new.len();
                    if self.live && line {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.error = Some(e);
                    self.eof = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(data: &[u8], cap: usize) -> Vec<(String, u64, bool)> {
        let mut r = BlockReader::with_capacity(io::Cursor::new(data.to_vec()), cap);
        let mut out = Vec::new();
        while let Ok(Some(b)) = r.next_block() {
            out.push(match b {
                Block::Lines { bytes, offset } => {
                    (String::from_utf8_lossy(bytes).into_owned(), offset, false)
                }
                Block::LongLine { head, offset } => {
                    (String::from_utf8_lossy(head).into_owned(), offset, true)
                }
            });
        }
        out
    }

    #[test]
    fn blocks_hold_whole_lines_with_offsets() {
        assert_eq!(
            blocks(b"ab\ncd\nef", 7),
            vec![("ab\ncd\n".into(), 0, false), ("ef".into(), 6, false)]
        );
        assert_eq!(blocks(b"", 7), vec![]);
    }

    #[test]
    fn a_line_longer_than_the_buffer_is_cut_and_skipped() {
        let got = blocks(b"0123456789abc\nnext\n", 6);
        assert_eq!(got[0], ("012345".into(), 0, true));
        assert_eq!(got[1], ("next\n".into(), 14, false));
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn a_live_reader_hands_out_lines_before_its_buffer_is_full() {
        struct Chunks(Vec<&'static [u8]>, usize);
        impl Read for Chunks {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.1 += 1;
                let Some(chunk) = self.0.first().copied() else {
                    return Ok(0);
                };
                self.0.remove(0);
                buf[..chunk.len()].copy_from_slice(chunk);
                Ok(chunk.len())
            }
        }
        let mut r = BlockReader::live(Chunks(vec![b"first\nsec", b"ond\n"], 0));
        match r.next_block() {
            Ok(Some(Block::Lines { bytes, .. })) => assert_eq!(bytes, b"first\n"),
            other => panic!("{other:?}"),
        }
        assert_eq!(r.inner.1, 1, "one read was enough");
        match r.next_block() {
            Ok(Some(Block::Lines { bytes, offset })) => {
                assert_eq!((bytes, offset), (&b"second\n"[..], 6))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_read_error_reports_how_far_it_got() {
        struct Broken(usize);
        impl Read for Broken {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::other("truncated"));
                }
                let n = self.0.min(buf.len());
                buf[..n].fill(b'\n');
                self.0 -= n;
                Ok(n)
            }
        }
        let mut r = BlockReader::with_capacity(Broken(10), 4);
        let mut lines = 0;
        let err = loop {
            match r.next_block() {
                Ok(Some(Block::Lines { bytes, .. })) => lines += bytes.len(),
                Ok(_) => panic!("expected an error"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.to_string(), "truncated");
        assert_eq!((lines, r.offset()), (10, 10));
    }
}

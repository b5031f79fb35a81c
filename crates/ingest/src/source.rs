//! Compressed bytes buffered ahead of a decoder, with the offset of the
//! next one, so that a decoder can look at a frame header before it is fed
//! and be fed exactly the bytes of one unit at a time.

use std::io::{self, Read};

/// Bytes read from the compressed input per refill.
const SOURCE_LEN: usize = 128 * 1024;

pub(crate) struct Source<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// Offset in the compressed input of the next unconsumed byte.
    pub(crate) at: u64,
}

impl<R: Read> Source<R> {
    pub(crate) fn new(inner: R) -> Self {
        Source {
            inner,
            buf: vec![0; SOURCE_LEN],
            start: 0,
            end: 0,
            eof: false,
            at: 0,
        }
    }

    /// The buffered bytes, reading more when there are none; empty at the
    /// end of the input.
    pub(crate) fn available(&mut self) -> io::Result<&[u8]> {
        if self.start == self.end {
            self.ensure(1)?;
        }
        Ok(self.buffered())
    }

    /// The bytes buffered now.
    pub(crate) fn buffered(&self) -> &[u8] {
        self.buf.get(self.start..self.end).unwrap_or_default()
    }

    /// Whether at least `n` bytes (`n` at most the buffer's size) are
    /// buffered, reading more as needed; false when the input ends first.
    pub(crate) fn ensure(&mut self, n: usize) -> io::Result<bool> {
        while self.end - self.start < n && !self.eof {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            let Some(free) = self.buf.get_mut(self.end..).filter(|f| !f.is_empty()) else {
                break;
            };
            match self.inner.read(free) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k.min(free.len()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.end - self.start >= n)
    }

    /// Marks `n` buffered bytes as used.
    pub(crate) fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.start);
        self.start += n;
        self.at += n as u64;
    }

    /// Passes over `n` bytes; returns how many there were before the end.
    pub(crate) fn skip(&mut self, mut n: u64) -> io::Result<u64> {
        let mut skipped = 0;
        while n > 0 {
            let have = self.available()?.len() as u64;
            if have == 0 {
                break;
            }
            let k = have.min(n);
            self.consume(k as usize);
            skipped += k;
            n -= k;
        }
        Ok(skipped)
    }
}

/// The bytes a decoder produced before it failed come first; the error
/// follows on the next read (held in `failed`).
pub(crate) fn output_then(
    produced: usize,
    error: io::Error,
    failed: &mut Option<io::Error>,
) -> io::Result<usize> {
    if produced > 0 {
        *failed = Some(error);
        Ok(produced)
    } else {
        Err(error)
    }
}

pub(crate) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ensure_reads_across_refills_and_skip_stops_at_the_end() {
        let data: Vec<u8> = (0..=255u8).cycle().take(SOURCE_LEN + 10).collect();
        let mut s = Source::new(&data[..]);
        s.skip(SOURCE_LEN as u64 - 2).unwrap_or_default();
        assert!(s.ensure(8).unwrap_or(false));
        assert_eq!(s.buffered()[0], data[SOURCE_LEN - 2]);
        assert_eq!(s.skip(100).unwrap_or_default(), 12);
        assert_eq!(s.at, data.len() as u64);
        assert!(!s.ensure(1).unwrap_or(true));
    }
}

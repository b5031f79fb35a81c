//! Readers that decode their input a piece at a time: a [`Decode`] makes
//! each piece, a [`DecodedReader`] hands the pieces out.

use std::io::{self, Read};

/// Decodes an input into text a piece at a time.
pub(crate) trait Decode {
    /// Puts the next piece of text in `out`, which is empty; false at the
    /// end of the input.
    fn fill(&mut self, out: &mut Vec<u8>) -> io::Result<bool>;
}

/// The text a [`Decode`] makes, read from the first byte.
pub struct DecodedReader<D> {
    decoder: D,
    /// The piece decoded last.
    out: Vec<u8>,
    /// How much of it was handed out.
    at: usize,
}

impl<D: Decode> DecodedReader<D> {
    pub(crate) fn new(decoder: D) -> DecodedReader<D> {
        DecodedReader {
            decoder,
            out: Vec::new(),
            at: 0,
        }
    }
}

impl<D: Decode> Read for DecodedReader<D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at >= self.out.len() {
            self.out.clear();
            self.at = 0;
            if !self.decoder.fill(&mut self.out)? {
                return Ok(0);
            }
        }
        let left = self.out.get(self.at..).unwrap_or_default();
        let n = left.len().min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..n), left.get(..n)) {
            to.copy_from_slice(from);
        }
        self.at += n;
        Ok(n)
    }
}

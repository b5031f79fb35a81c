//! Readers that decode their input a piece at a time: a [`Decode`] makes
//! each piece, a [`DecodedReader`] hands the pieces out; a [`LineDecoder`]
//! makes a piece of each line with a step of its own.

use std::io::{self, BufRead, BufReader, Read};

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

/// Most bytes read as one line by a [`LineDecoder`]; a longer line is
/// read in pieces this long.
pub(crate) const MAX_DECODED_LINE: usize = 16 * 1024 * 1024;

/// What a [`LineDecoder`] makes of each line: the line's text, with its
/// line end, put in the output.
pub(crate) type LineStep = fn(&[u8], &mut Vec<u8>);

/// A decoder that reads its input a line at a time and makes each line's
/// text with its step.
pub struct LineDecoder<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
    step: LineStep,
}

/// A reader of the text `step` makes of each line of `inner`.
pub(crate) fn line_reader<R: Read>(inner: R, step: LineStep) -> DecodedReader<LineDecoder<R>> {
    DecodedReader::new(LineDecoder {
        inner: BufReader::with_capacity(256 * 1024, inner),
        line: Vec::new(),
        step,
    })
}

impl<R: Read> Decode for LineDecoder<R> {
    fn fill(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        self.line.clear();
        let n = (&mut self.inner)
            .take(MAX_DECODED_LINE as u64)
            .read_until(b'\n', &mut self.line)?;
        if n == 0 {
            return Ok(false);
        }
        (self.step)(&self.line, out);
        Ok(true)
    }
}

/// The whole text `reader` gives, for the decoders' tests.
#[cfg(test)]
pub(crate) fn read_all(mut reader: impl Read) -> String {
    let mut out = Vec::new();
    reader
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8_lossy(&out).into_owned()
}

//! xz input, stream by stream.
//!
//! liblzma decodes each stream under a memory limit ([`XZ_MEMLIMIT`]): a
//! stream asking for a larger dictionary is refused before the memory is
//! taken. Streams are taken one at a time (not with liblzma's
//! `CONCATENATED` mode) so that the stream padding between them (zero
//! bytes) is passed over without counting as compressed data, and
//! everything decoded before a failed integrity check is handed out before
//! the error.

use crate::source::{invalid, output_then, Source};
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use xz2::stream::{Action, Error, Status, Stream};

/// Memory one xz stream may use to decode: 128 MiB, twice what `xz -9e`
/// needs (a 64 MiB dictionary).
pub const XZ_MEMLIMIT: u64 = 128 << 20;

const MAGIC: &[u8] = b"\xfd7zXZ\x00";

pub(crate) fn is_xz(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

pub(crate) struct XzStreams<R> {
    src: Source<R>,
    stream: Option<Stream>,
    /// Compressed bytes of streams consumed so far (padding not counted).
    packed: Arc<AtomicU64>,
    failed: Option<io::Error>,
}

impl<R: Read> XzStreams<R> {
    pub(crate) fn new(inner: R, packed: Arc<AtomicU64>) -> Self {
        XzStreams {
            src: Source::new(inner),
            stream: None,
            packed,
            failed: None,
        }
    }

    /// Passes over stream padding and starts the next stream; `false` at
    /// the end of the input.
    fn next_stream(&mut self) -> io::Result<bool> {
        loop {
            let avail = self.src.available()?;
            let zeros = avail.iter().take_while(|&&b| b == 0).count();
            if zeros == 0 {
                break;
            }
            self.src.consume(zeros);
        }
        if !self.src.ensure(MAGIC.len())? {
            return match self.src.buffered().len() {
                0 => Ok(false),
                n => Err(invalid(format!(
                    "xz: {n} stray byte(s) after the last stream at compressed byte {}",
                    self.src.at
                ))),
            };
        }
        if !is_xz(self.src.buffered()) {
            return Err(invalid(format!(
                "xz: no stream at compressed byte {}",
                self.src.at
            )));
        }
        let stream = Stream::new_stream_decoder(XZ_MEMLIMIT, 0).map_err(io::Error::from)?;
        self.stream = Some(stream);
        Ok(true)
    }
}

impl<R: Read> Read for XzStreams<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.stream.is_none() && !self.next_stream()? {
                return Ok(0);
            }
            let at = self.src.at;
            let avail = self.src.available()?;
            let Some(stream) = self.stream.as_mut() else {
                return Ok(0);
            };
            let at_end = avail.is_empty();
            let action = if at_end { Action::Finish } else { Action::Run };
            let (in0, out0) = (stream.total_in(), stream.total_out());
            let result = stream.process(avail, buf, action);
            let consumed = (stream.total_in() - in0) as usize;
            let produced = (stream.total_out() - out0) as usize;
            self.src.consume(consumed);
            self.packed.fetch_add(consumed as u64, Ordering::Relaxed);
            match result {
                Ok(Status::StreamEnd) => {
                    self.stream = None;
                    if produced > 0 {
                        return Ok(produced);
                    }
                }
                Ok(_) if produced > 0 => return Ok(produced),
                Ok(_) if at_end || consumed == 0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "xz: the data ends inside a stream at compressed byte {} (truncated)",
                            self.src.at
                        ),
                    ));
                }
                Ok(_) => {}
                Err(Error::MemLimit) => {
                    let e = invalid(format!(
                        "xz: the stream at compressed byte {at} needs more than the {} MiB of \
                         memory coroner allows for decoding (a dictionary that large is no \
                         ordinary log or core); refused",
                        XZ_MEMLIMIT >> 20
                    ));
                    return output_then(produced, e, &mut self.failed);
                }
                Err(e) => {
                    let what = match e {
                        Error::Data => "corrupt data or a failed integrity check".to_owned(),
                        other => other.to_string(),
                    };
                    let e = invalid(format!("xz: {what} (at compressed byte {at} or after)"));
                    return output_then(produced, e, &mut self.failed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{drain, text};

    fn xz(data: &[u8], check: xz2::stream::Check) -> Vec<u8> {
        let stream = Stream::new_easy_encoder(6, check).unwrap_or_else(|e| panic!("{e}"));
        let mut enc = xz2::write::XzEncoder::new_stream(Vec::new(), stream);
        io::Write::write_all(&mut enc, data).unwrap_or_else(|e| panic!("{e}"));
        enc.finish().unwrap_or_else(|e| panic!("{e}"))
    }

    fn decode(data: &[u8]) -> (Vec<u8>, Option<String>, u64) {
        let packed = Arc::new(AtomicU64::new(0));
        let r = XzStreams::new(data, Arc::clone(&packed));
        drain(r, &packed)
    }

    #[test]
    fn concatenated_streams_and_padding() {
        let (a, b) = (text(10_000), text(10));
        let mut data = xz(&a, xz2::stream::Check::Crc64);
        data.extend_from_slice(&[0; 4096]);
        data.extend(xz(&b, xz2::stream::Check::Crc32));
        data.extend_from_slice(&[0; 8]);
        let (out, err, packed) = decode(&data);
        assert_eq!(err, None);
        assert_eq!(out, [a, b].concat());
        assert_eq!(packed, data.len() as u64 - 4096 - 8, "padding not counted");
    }

    #[test]
    fn a_failed_check_comes_after_everything_decoded() {
        let a = text(50_000);
        let mut data = xz(&a, xz2::stream::Check::Crc64);
        // The block's CRC64 sits just before the index, which is at least
        // 12 bytes before the 12-byte footer; corrupt the check itself.
        let footer = data.len() - 12;
        let index_size =
            (u32::from_le_bytes(data[footer + 4..footer + 8].try_into().unwrap_or_default())
                as usize
                + 1)
                * 4;
        let check_at = footer - index_size - 8;
        data[check_at] ^= 0xff;
        let (out, err, _) = decode(&data);
        assert_eq!(out.len(), a.len(), "the whole block is handed out");
        assert!(err.is_some_and(|e| e.contains("integrity")));
    }

    #[test]
    fn truncation_is_said() {
        let data = xz(&text(1000), xz2::stream::Check::Crc64);
        let (_, err, _) = decode(&data[..data.len() / 2]);
        assert!(
            err.as_ref().is_some_and(|e| e.contains("truncated")),
            "{err:?}"
        );
    }
}

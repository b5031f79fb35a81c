//! Zstandard input, frame by frame (RFC 8878).
//!
//! libzstd decodes; this reader walks the frame layout around it (frame
//! header, block headers, checksum) so that it can
//! - pass over skippable frames (pzstd writes one before every frame) without
//!   counting them as compressed data, so padding cannot raise the
//!   expansion cap;
//! - feed the decoder one block at a time and the checksum on its own, so
//!   that everything decoded before a failed checksum is handed out before
//!   the error (libzstd reports a bad checksum in the same call that
//!   flushes the last block, and the output of a failing call is lost);
//! - say where the data stops: inside a frame, or with bytes that are no
//!   frame.
//!
//! A frame whose window is larger than [`ZSTD_WINDOW_LOG_MAX`] is refused
//! by libzstd before any memory is taken for it.
//!
//! Frames of zstd's formats before 1.0 (v0.4 to v0.7, from 2015 and 2016)
//! are read too: libzstd's legacy decoders take them a little at a time
//! (their layouts differ from version to version, so this reader does not
//! walk them), counted as compressed bytes consumed like any frame. Their
//! windows are at most 2^27 bytes by their own formats. A legacy decoder
//! says nothing of what it wrote in a call that fails, so a failed check
//! loses what that call decoded, from at most [`LEGACY_FEED`] compressed
//! bytes. Frames of v0.1 to v0.3, which libzstd decodes only whole, in
//! memory, are an error that names their version.

use crate::source::{invalid, output_then, Source};
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use zstd::stream::raw::{DParameter, Decoder, InBuffer, Operation, OutBuffer};

/// Largest window a frame may ask for: 2^27 bytes (128 MiB), libzstd's
/// own default, as `zstd -d` without `--long`.
pub const ZSTD_WINDOW_LOG_MAX: u32 = 27;

const MAGIC: u32 = 0xfd2f_b528;

/// The oldest legacy format libzstd decodes as a stream.
const LEGACY_STREAMED: u32 = 4;

/// Compressed bytes handed to a legacy decoder at a time.
const LEGACY_FEED: u64 = 1024;

/// Whether `head` starts a zstd frame, a skippable frame or a frame of a
/// format before 1.0.
pub(crate) fn is_zstd(head: &[u8]) -> bool {
    magic(head).is_some_and(|m| m == MAGIC || is_skippable(m) || legacy_version(m).is_some())
}

/// The format (1 to 7 for v0.1 to v0.7) of a frame of zstd before 1.0
/// whose magic number is `magic`: `0xfd2fb522` to `0xfd2fb527` read as
/// little-endian, v0.1's written the other way round.
fn legacy_version(magic: u32) -> Option<u32> {
    match magic {
        0x1eb5_2ffd => Some(1),
        0xfd2f_b522..=0xfd2f_b527 => Some(magic - 0xfd2f_b520),
        _ => None,
    }
}

fn magic(head: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(head.get(..4)?.try_into().ok()?))
}

fn is_skippable(magic: u32) -> bool {
    magic & 0xffff_fff0 == 0x184d_2a50
}

/// Where the reader is in the frame layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Between frames.
    Between,
    /// Feeding the decoder `left` more bytes of one unit, then `then`.
    Feed { left: u64, then: After },
    /// Expecting a block header.
    BlockHeader,
    /// Handing out what the decoder still holds, then `then`.
    Drain { then: After },
    /// Inside a frame of a format before 1.0, which the decoder walks.
    Legacy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    BlockHeader,
    /// The frame's last block: its checksum, if it has one, comes next.
    LastBlock,
    Checksum,
    FrameEnd,
}

pub(crate) struct ZstdFrames<R> {
    src: Source<R>,
    decoder: Decoder<'static>,
    stage: Stage,
    checksum: bool,
    /// Compressed bytes of frames consumed so far (skippable frames not
    /// counted).
    packed: Arc<AtomicU64>,
    failed: Option<io::Error>,
}

impl<R: Read> ZstdFrames<R> {
    pub(crate) fn new(inner: R, packed: Arc<AtomicU64>) -> io::Result<Self> {
        let mut decoder = Decoder::new()?;
        decoder.set_parameter(DParameter::WindowLogMax(ZSTD_WINDOW_LOG_MAX))?;
        Ok(ZstdFrames {
            src: Source::new(inner),
            decoder,
            stage: Stage::Between,
            checksum: false,
            packed,
            failed: None,
        })
    }

    /// Starts the next frame, passing over skippable ones; `false` at the
    /// end of the input.
    fn next_frame(&mut self) -> io::Result<bool> {
        loop {
            if !self.src.ensure(4)? {
                return match self.src.buffered().len() {
                    0 => Ok(false),
                    n => Err(invalid(format!(
                        "zstd: {n} stray byte(s) after the last frame at compressed byte {}",
                        self.src.at
                    ))),
                };
            }
            let m = magic(self.src.buffered()).unwrap_or_default();
            if is_skippable(m) {
                if !self.src.ensure(8)? {
                    return Err(self.cut("a skippable frame's header"));
                }
                let size = self
                    .src
                    .buffered()
                    .get(4..8)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u32::from_le_bytes);
                self.src.consume(8);
                if self.src.skip(u64::from(size))? < u64::from(size) {
                    return Err(self.cut("a skippable frame"));
                }
                continue;
            }
            if let Some(version) = legacy_version(m) {
                if version < LEGACY_STREAMED {
                    return Err(invalid(format!(
                        "zstd: a frame of zstd's format v0.{version} (2015) at compressed byte {}: \
                         only v0.4 and later can be read",
                        self.src.at
                    )));
                }
                // The decoder recognises the frame from its first bytes.
                if !self.src.ensure(8)? {
                    return Err(self.cut("a frame header"));
                }
                self.stage = Stage::Legacy;
                return Ok(true);
            }
            if m != MAGIC {
                return Err(invalid(format!(
                    "zstd: no frame at compressed byte {} (magic {m:#010x})",
                    self.src.at
                )));
            }
            if !self.src.ensure(5)? {
                return Err(self.cut("a frame header"));
            }
            let fhd = self.src.buffered().get(4).copied().unwrap_or_default();
            let single_segment = fhd & 0x20 != 0;
            let window = if single_segment { 0 } else { 1 };
            let dict_id = match fhd & 3 {
                0 => 0,
                1 => 1,
                2 => 2,
                _ => 4,
            };
            let content_size = match fhd >> 6 {
                0 if single_segment => 1,
                0 => 0,
                1 => 2,
                2 => 4,
                _ => 8,
            };
            self.checksum = fhd & 4 != 0;
            self.stage = Stage::Feed {
                left: 5 + window + dict_id + content_size,
                then: After::BlockHeader,
            };
            return Ok(true);
        }
    }

    fn cut(&self, inside: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "zstd: the data ends inside {inside} at compressed byte {} (truncated)",
                self.src.at
            ),
        )
    }

    fn block_header(&mut self) -> io::Result<()> {
        if !self.src.ensure(3)? {
            return Err(self.cut("a frame (at a block header)"));
        }
        let b = self.src.buffered();
        let header = u32::from(b.first().copied().unwrap_or_default())
            | u32::from(b.get(1).copied().unwrap_or_default()) << 8
            | u32::from(b.get(2).copied().unwrap_or_default()) << 16;
        let last = header & 1 != 0;
        let size = u64::from(header >> 3);
        let body = match (header >> 1) & 3 {
            1 => 1, // RLE: one byte repeated
            _ => size,
        };
        self.stage = Stage::Feed {
            left: 3 + body,
            then: if last {
                After::LastBlock
            } else {
                After::BlockHeader
            },
        };
        Ok(())
    }

    /// Runs the decoder on at most `limit` bytes of input.
    fn run(&mut self, limit: u64, out: &mut [u8]) -> io::Result<Step> {
        let at = self.src.at;
        let avail = self.src.available()?;
        let give = avail
            .get(
                ..usize::try_from(limit)
                    .unwrap_or(usize::MAX)
                    .min(avail.len()),
            )
            .unwrap_or_default();
        let mut input = InBuffer::around(give);
        let mut output = OutBuffer::around(out);
        let result = self.decoder.run(&mut input, &mut output);
        let (consumed, produced) = (input.pos(), output.pos());
        self.src.consume(consumed);
        self.packed.fetch_add(consumed as u64, Ordering::Relaxed);
        let (hint, error) = match result {
            Ok(hint) => (hint, None),
            Err(e) => (
                0,
                Some(invalid(format!(
                    "zstd: {e} (at compressed byte {at} or after)"
                ))),
            ),
        };
        Ok(Step {
            consumed,
            produced,
            hint,
            error,
        })
    }

    /// Decodes more of a legacy frame into `buf`: `Some(n)` for `n` bytes
    /// decoded, `None` at the frame's end.
    fn legacy(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        let step = self.run(LEGACY_FEED, buf)?;
        if let Some(e) = step.error {
            // Where a legacy decoder fails, its positions are not where it
            // stopped: what this call wrote is not handed out.
            return Err(e);
        }
        if step.hint == 0 {
            self.stage = Stage::Between;
        }
        if step.produced > 0 || step.hint == 0 {
            return Ok((step.produced > 0).then_some(step.produced));
        }
        if step.consumed > 0 {
            return Ok(Some(0));
        }
        Err(if self.src.available()?.is_empty() {
            self.cut("a frame")
        } else {
            invalid(format!(
                "zstd: the decoder stopped at compressed byte {}",
                self.src.at
            ))
        })
    }
}

/// What one run of the decoder did.
struct Step {
    consumed: usize,
    produced: usize,
    /// libzstd's hint: 0 once a frame is decoded and handed out whole.
    hint: usize,
    error: Option<io::Error>,
}

impl<R: Read> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.stage {
                Stage::Between => {
                    if !self.next_frame()? {
                        return Ok(0);
                    }
                }
                Stage::BlockHeader => self.block_header()?,
                Stage::Legacy => match self.legacy(buf)? {
                    Some(0) | None => {}
                    Some(n) => return Ok(n),
                },
                Stage::Drain { then } => {
                    let step = self.run(0, buf)?;
                    if let Some(e) = step.error {
                        return output_then(step.produced, e, &mut self.failed);
                    }
                    if step.produced > 0 {
                        return Ok(step.produced);
                    }
                    self.stage = match then {
                        After::Checksum => Stage::Feed {
                            left: 4,
                            then: After::FrameEnd,
                        },
                        _ => Stage::Between,
                    };
                }
                Stage::Feed { left: 0, then } => {
                    self.stage = match then {
                        After::BlockHeader => Stage::BlockHeader,
                        After::LastBlock if self.checksum => Stage::Drain {
                            then: After::Checksum,
                        },
                        _ => Stage::Drain {
                            then: After::FrameEnd,
                        },
                    };
                }
                Stage::Feed { left, then } => {
                    if self.src.available()?.is_empty() {
                        return Err(self.cut("a frame"));
                    }
                    let step = self.run(left, buf)?;
                    self.stage = Stage::Feed {
                        left: left - (step.consumed as u64).min(left),
                        then,
                    };
                    if let Some(e) = step.error {
                        return output_then(step.produced, e, &mut self.failed);
                    }
                    if step.produced > 0 {
                        return Ok(step.produced);
                    }
                    if step.consumed == 0 {
                        return Err(invalid(format!(
                            "zstd: the decoder stopped at compressed byte {}",
                            self.src.at
                        )));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{drain, legacy_block_header, legacy_frame, text};

    fn decode(data: &[u8]) -> (Vec<u8>, Option<String>, u64) {
        let packed = Arc::new(AtomicU64::new(0));
        let r = ZstdFrames::new(data, Arc::clone(&packed)).unwrap_or_else(|e| panic!("{e}"));
        drain(r, &packed)
    }

    fn with_checksum(data: &[u8]) -> Vec<u8> {
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap_or_else(|e| panic!("{e}"));
        enc.include_checksum(true).unwrap_or_else(|e| panic!("{e}"));
        io::Write::write_all(&mut enc, data).unwrap_or_else(|e| panic!("{e}"));
        enc.finish().unwrap_or_else(|e| panic!("{e}"))
    }

    fn skippable(len: u32) -> Vec<u8> {
        let mut f = vec![0x50, 0x2a, 0x4d, 0x18];
        f.extend_from_slice(&len.to_le_bytes());
        f.resize(8 + len as usize, 0);
        f
    }

    #[test]
    fn frames_and_skippable_frames_are_read_whole() {
        let (a, b) = (text(20_000), text(300));
        let mut data = skippable(4);
        data.extend(with_checksum(&a));
        data.extend(skippable(1000));
        data.extend(zstd::encode_all(&b[..], 1).unwrap_or_default());
        let (out, err, packed) = decode(&data);
        assert_eq!(err, None);
        assert_eq!(out, [a, b].concat());
        assert_eq!(
            packed,
            data.len() as u64 - 12 - 1008,
            "skippable frames not counted"
        );
    }

    #[test]
    fn a_bad_checksum_comes_after_everything_decoded() {
        let a = text(50_000);
        let mut data = with_checksum(&a);
        let last = data.len() - 1;
        data[last] ^= 0xff;
        let (out, err, _) = decode(&data);
        assert_eq!(out, a, "the whole frame is handed out");
        assert!(err.is_some_and(|e| e.contains("checksum")));
    }

    #[test]
    fn frames_before_1_0_are_read_among_the_others() {
        let (a, b) = (text(20_000), text(300));
        // libzstd reads the hand-made frames as it reads old files.
        for version in 4..=7 {
            let runs = usize::from(version > 4);
            let frame = legacy_frame(version, &a, runs);
            let whole =
                zstd::decode_all(&frame[..]).unwrap_or_else(|e| panic!("v0.{version}: {e}"));
            assert_eq!(whole, [&a[..], &b"a".repeat(runs << 17)].concat());
        }
        let mut data = Vec::new();
        for version in 4..=7 {
            data.extend(legacy_frame(version, &a, 0));
        }
        data.extend(skippable(10));
        data.extend(zstd::encode_all(&b[..], 1).unwrap_or_default());
        data.extend(legacy_frame(7, &b, 0));
        assert!(is_zstd(&data));
        let (out, err, packed) = decode(&data);
        assert_eq!(err, None);
        assert_eq!(out, [&a[..], &a, &a, &a, &b, &b].concat());
        assert_eq!(
            packed,
            data.len() as u64 - 18,
            "skippable frames not counted"
        );
    }

    #[test]
    fn a_legacy_frame_cut_or_failing_its_check_is_an_error() {
        let a = text(20_000);
        let frame = legacy_frame(7, &a, 0);
        let (out, err, _) = decode(&frame[..frame.len() - 2]);
        assert!(err.is_some_and(|e| e.contains("truncated")));
        assert_eq!(out, a[..out.len()]);
        // A checksum (in v0.7, 22 bits in the last block's header) that
        // does not match.
        let mut checked = frame.clone();
        checked[4] |= 4;
        let end = checked.len() - 3;
        checked[end..].copy_from_slice(&[0xc0 | 0x15, 0x55, 0x55]);
        let (out, err, _) = decode(&checked);
        assert!(err.is_some_and(|e| e.contains("checksum")));
        assert!(out.len() + 4096 >= a.len(), "{} of {}", out.len(), a.len());
        assert_eq!(out, a[..out.len()]);
        // Bytes after the end block are no frame.
        let mut stray = frame;
        stray.extend_from_slice(&legacy_block_header(1, 0));
        let (_, err, _) = decode(&stray);
        assert!(err.is_some_and(|e| e.contains("stray")));
    }

    #[test]
    fn frames_of_v01_to_v03_are_named_and_refused() {
        for (magic, version) in [
            (0x1eb5_2ffd_u32, "v0.1"),
            (0xfd2f_b522, "v0.2"),
            (0xfd2f_b523, "v0.3"),
        ] {
            let mut data = magic.to_le_bytes().to_vec();
            data.extend_from_slice(&[0; 16]);
            assert!(is_zstd(&data));
            let (_, err, _) = decode(&data);
            assert!(err.is_some_and(|e| e.contains(version)), "{version}");
        }
    }

    #[test]
    fn truncation_and_stray_bytes_are_said() {
        let data = with_checksum(&text(1000));
        let (_, err, _) = decode(&data[..data.len() / 2]);
        assert!(err.is_some_and(|e| e.contains("truncated")));
        let mut stray = data.clone();
        stray.extend_from_slice(b"xy");
        let (out, err, _) = decode(&stray);
        assert_eq!(out, text(1000));
        assert!(err.is_some_and(|e| e.contains("stray")));
    }
}

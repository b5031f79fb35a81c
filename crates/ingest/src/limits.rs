//! How far a compressed input may expand.
//!
//! A small compressed file can decompress to an enormous stream (a
//! "decompression bomb"). Both kinds of compressed input are capped the same
//! way: at most `ratio` decompressed bytes per compressed byte, but always at
//! least `floor` bytes and never more than `ceiling`. Output is capped as it
//! streams, against the compressed bytes the decoder has consumed so far
//! (zstd skippable frames and xz stream padding do not count, so padding
//! cannot raise the cap); content detected as a core dump gets
//! [`CORE_EXPANSION`] instead of [`TEXT_EXPANSION`].

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A cap on decompressed size relative to compressed size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpansionLimit {
    /// Decompressed bytes allowed per compressed byte.
    pub ratio: u64,
    /// Decompressed bytes always allowed, whatever the compressed size.
    pub floor: u64,
    /// Decompressed bytes never exceeded.
    pub ceiling: u64,
}

impl ExpansionLimit {
    /// The most decompressed bytes allowed from `packed` compressed bytes.
    pub fn allowed(&self, packed: u64) -> u64 {
        packed
            .saturating_mul(self.ratio)
            .max(self.floor)
            .min(self.ceiling)
    }
}

/// Compressed text inputs (logs): 1000:1, at least 512 MiB. Real logs
/// compress 5:1 to 50:1; very repetitive ones a few hundred to one.
pub const TEXT_EXPANSION: ExpansionLimit = ExpansionLimit {
    ratio: 1000,
    floor: 512 << 20,
    ceiling: u64::MAX,
};

/// Compressed core dumps: 4096:1, at least 1 GiB, at most 64 GiB. Cores are
/// mostly zero pages and compress far better than text (1600:1 is seen).
pub const CORE_EXPANSION: ExpansionLimit = ExpansionLimit {
    ratio: 4096,
    floor: 1 << 30,
    ceiling: 64 << 30,
};

/// Counts the bytes read through it into a shared counter.
pub(crate) struct Counted<R> {
    pub(crate) inner: R,
    pub(crate) count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Decompressed output that fails once it grows past the limit allowed for
/// the compressed bytes consumed so far. Only bytes the decoder has used
/// count: padding at the end of a file raises nothing before it is read,
/// and skippable frames and stream padding never count.
pub(crate) struct Capped<R> {
    pub(crate) inner: R,
    pub(crate) packed: Arc<AtomicU64>,
    /// Shared so that the limit can change once the content is known.
    pub(crate) limit: Arc<Mutex<ExpansionLimit>>,
    pub(crate) out: u64,
    pub(crate) stopped: bool,
}

impl<R> Capped<R> {
    /// `inner`'s output, capped by `limit` relative to the compressed bytes
    /// counted in `packed`.
    pub(crate) fn new(inner: R, packed: Arc<AtomicU64>, limit: Arc<Mutex<ExpansionLimit>>) -> Self {
        Capped {
            inner,
            packed,
            limit,
            out: 0,
            stopped: false,
        }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stopped {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        let out = self.out.saturating_add(n as u64);
        let packed = self.packed.load(Ordering::Relaxed);
        let limit = *self.limit.lock().unwrap_or_else(|e| e.into_inner());
        if out > limit.allowed(packed) {
            self.stopped = true;
            let which = if out > limit.ceiling {
                format!("the ceiling of {} GiB", limit.ceiling >> 30)
            } else {
                format!(
                    "the ratio of {}:1 to the {packed} compressed bytes consumed \
                     (allowed once past the first {} MiB)",
                    limit.ratio,
                    limit.floor >> 20
                )
            };
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "decompression stopped after {} bytes of output by the expansion limit: \
                     {which}; this looks like a decompression bomb",
                    self.out
                ),
            ));
        }
        self.out = out;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_is_the_ratio_between_floor_and_ceiling() {
        let l = ExpansionLimit {
            ratio: 10,
            floor: 100,
            ceiling: 1000,
        };
        assert_eq!(l.allowed(0), 100);
        assert_eq!(l.allowed(50), 500);
        assert_eq!(l.allowed(500), 1000);
        assert_eq!(TEXT_EXPANSION.allowed(u64::MAX), u64::MAX);
    }

    #[test]
    fn capped_output_fails_past_the_limit() {
        let packed = Arc::new(AtomicU64::new(1));
        let mut r = Capped {
            inner: io::repeat(b'a'),
            packed,
            limit: Arc::new(Mutex::new(ExpansionLimit {
                ratio: 10,
                floor: 100,
                ceiling: 1000,
            })),
            out: 0,
            stopped: false,
        };
        let mut sink = Vec::new();
        let err = r.by_ref().take(10_000).read_to_end(&mut sink);
        assert!(err.is_err());
        assert!(sink.len() <= 100, "{}", sink.len());
    }
}

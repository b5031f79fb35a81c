//! Helpers shared by the decompressing readers' unit tests.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// Reads `r` to its end or its first error: what was read, the error's
/// text if any, and the compressed bytes the reader reported consumed.
pub(crate) fn drain(mut r: impl Read, packed: &AtomicU64) -> (Vec<u8>, Option<String>, u64) {
    let mut out = Vec::new();
    let mut buf = vec![0; 4096];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (out, None, packed.load(Ordering::Relaxed)),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Some(e.to_string()), packed.load(Ordering::Relaxed)),
        }
    }
}

/// `lines` lines of step and loss, text that compresses like a log.
pub(crate) fn text(lines: u64) -> Vec<u8> {
    (0..lines)
        .flat_map(|n| format!("step {n} loss {}\n", n * 7919 % 1000).into_bytes())
        .collect()
}

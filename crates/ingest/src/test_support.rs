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

/// A frame of zstd's format v0.`version` (4 to 7) holding `data` in raw
/// blocks, then `runs` blocks of 128 KiB of `a` from 8 bytes each (v0.5 to
/// v0.7), with a 1 MiB window and no checksum: the frame and block layouts
/// that libzstd's legacy decoders read (`lib/legacy/zstd_v0N.c`), for
/// formats that no encoder at hand still writes.
pub(crate) fn legacy_frame(version: u8, data: &[u8], runs: usize) -> Vec<u8> {
    let mut frame = (0xfd2f_b520 + u32::from(version)).to_le_bytes().to_vec();
    match version {
        // The window's log minus 11 (v0.4, v0.5) or 12 (v0.6).
        4 | 5 => frame.push(20 - 11),
        6 => frame.push(20 - 12),
        // No dictionary, checksum or content size; the window's log
        // minus 10 in the top five bits of the next byte.
        _ => frame.extend([0x00, (20 - 10) << 3]),
    }
    for chunk in data.chunks(100_000) {
        frame.extend(legacy_block_header(1, chunk.len()));
        frame.extend_from_slice(chunk);
    }
    for _ in 0..runs {
        // A compressed block of no sequence, its 128 KiB of literals one
        // byte repeated: the literals header says RLE (top two bits), a
        // three-byte size (next two), the size's top four bits, then the
        // rest of the size, the byte, and a sequence count of 0.
        let size = 128u32 << 10;
        let [_, high, mid, low] = size.to_be_bytes();
        frame.extend(legacy_block_header(0, 5));
        frame.extend([3 << 6 | 3 << 4 | (high & 15), mid, low, b'a', 0]);
    }
    frame.extend(legacy_block_header(3, 0));
    frame
}

/// A legacy block header: the type (0 compressed, 1 raw, 2 RLE, 3 end) in
/// the top two bits, the size in the low 19 bits, big-endian.
pub(crate) fn legacy_block_header(kind: u8, size: usize) -> [u8; 3] {
    let [_, high, mid, low] = u32::try_from(size).unwrap_or(u32::MAX).to_be_bytes();
    [kind << 6 | (high & 7), mid, low]
}

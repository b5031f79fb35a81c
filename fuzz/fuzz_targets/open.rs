//! Arbitrary bytes as an input: compression sniffed and undone frame by
//! frame (zstd frames and skippable frames, gzip members, xz streams and
//! their padding; capped relative to the compressed bytes consumed), UTF-16
//! text decoded, kind detected, a notebook read as its outputs, JSON log
//! lines read as their text, line ends written as `\n` or lost put back,
//! then read to the end in blocks of whole lines as the scanner reads it.
#![no_main]

use coroner_ingest::{open_reader, Block, BlockReader, MAX_LINE};
use libfuzzer_sys::fuzz_target;
use std::io::{Cursor, Read};

/// Decompressed bytes read at most per run, to keep runs fast.
const READ_CAP: u64 = 64 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(opened) = open_reader(Box::new(Cursor::new(data.to_vec()))) else {
        return;
    };
    let mut blocks = BlockReader::with_capacity(opened.reader.take(READ_CAP), 4096);
    let mut last = 0u64;
    while let Ok(Some(block)) = blocks.next_block() {
        let (len, offset) = match block {
            Block::Lines { bytes, offset } => (bytes.len(), offset),
            Block::LongLine { head, offset } => {
                assert!(head.len() <= MAX_LINE);
                (head.len(), offset)
            }
        };
        assert!(len > 0);
        assert!(offset >= last);
        last = offset;
    }
});

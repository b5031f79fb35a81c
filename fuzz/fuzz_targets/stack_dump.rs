//! Arbitrary bytes as log lines with thread stack dumps in them.
#![no_main]

use coroner_logs::{strip_rank_prefix, StackDumpReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut reader = StackDumpReader::new();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let p = strip_rank_prefix(line);
        reader.feed(p.rest, line, p.rank, i as u64 + 1, i % 7 != 6, &mut out);
    }
    reader.finish(&mut out);
    for dump in &out {
        assert!(!dump.threads.is_empty());
        let _ = dump.main_thread();
    }
});

//! Arbitrary bytes as log lines with thread stack dumps, desync reports
//! and Horovod's stall reports in them.
#![no_main]

use coroner_logs::{strip_rank_prefix, DesyncReader, StackDumpReader, StallReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut reader = StackDumpReader::new();
    let mut desyncs = DesyncReader::new();
    let mut out = Vec::new();
    let mut snapshots = Vec::new();
    let mut stalls = StallReader::new();
    let mut reports = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let p = strip_rank_prefix(line);
        reader.feed(p.rest, line, p.rank, i as u64 + 1, i % 7 != 6, &mut out);
        desyncs.feed(
            p.rest,
            line,
            p.rank,
            i as u64 + 1,
            i % 7 != 6,
            &mut snapshots,
        );
        stalls.feed(p.rest, line, i as u64 + 1, i % 7 != 6, &mut reports);
    }
    reader.finish(&mut out);
    desyncs.finish(&mut snapshots);
    stalls.finish(&mut reports);
    for report in &reports {
        assert!(!report.entries.is_empty() && report.entries.len() <= 256);
        assert!(report.entries.iter().all(|e| report.text_of(e.line).is_some()));
    }
    assert!(snapshots.iter().all(|s| !s.groups.is_empty()));
    for dump in &out {
        assert!(!dump.threads.is_empty());
        let _ = dump.main_thread();
    }
});

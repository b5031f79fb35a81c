//! Arbitrary bytes as a zip archive named on the command line: its
//! directory listed (members past the limit, overlapping members, unknown
//! methods and encryption refused with a reason), then every member opened
//! as an input and read to the end, deflated ones under the expansion limit.
#![no_main]

use coroner_ingest::{discover, open, Selection};
use libfuzzer_sys::fuzz_target;
use std::io::Read;

/// Decompressed bytes read at most per member, to keep runs fast.
const READ_CAP: u64 = 16 << 20;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("coroner-fuzz-zip-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let path = dir.join("input.zip");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let found = discover(&[path.to_string_lossy().into_owned()], &Selection::default());
    for input in &found.inputs {
        let Ok(opened) = open(input) else {
            continue;
        };
        let mut sink = Vec::new();
        let _ = opened.reader.take(READ_CAP).read_to_end(&mut sink);
    }
});

//! Arbitrary bytes as a CUDA memory snapshot, examined.
#![no_main]

use coroner_dumps::snapshot::{examine, read};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(snapshot) = read(data) {
        let x = examine(&snapshot);
        assert!(x.largest_free <= x.free);
    }
});

//! Arbitrary bytes as a pickle: the size check, then the decoder.
#![no_main]

use coroner_dumps::pickle::{check, decode, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let small = Limits {
        nodes: 100_000,
        depth: 48,
    };
    let checked = check(data, small);
    let decoded = decode(data, small);
    // What the check refuses is never decoded.
    assert!(checked.is_ok() || decoded.is_err());
});

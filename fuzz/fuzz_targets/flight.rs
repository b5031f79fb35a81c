//! Arbitrary bytes as a flight-recorder dump (pickle or JSON), matched
//! against itself as two ranks.
#![no_main]

use coroner_dumps::flight::{compare, read};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = read(data) {
        let _ = compare(&[(0, &record), (1, &record)]);
        let _ = compare(&[(0, &record)]);
    }
});
